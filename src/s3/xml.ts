/**
 * S3's XML (contract §12): answers built from nested [name, value] lists, the error body, and a
 * small parser for the bodies S3 clients send (CompleteMultipartUpload, Delete,
 * CreateBucketConfiguration). The parser refuses DOCTYPE, so no entity is ever expanded.
 */
import { s3Errors, type S3Error } from './errors.js';

export const S3_NAMESPACE = 'http://s3.amazonaws.com/doc/2006-03-01/';

export type XmlValue = string | number | boolean | null | undefined | XmlFields;
/** Child elements in order; a null or undefined value leaves its element out. */
export type XmlFields = Array<[string, XmlValue]>;

export function xmlEscape(text: string): string {
  return text.replace(/[&<>"'\r]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;', '\r': '&#13;' })[c]!);
}

function render(fields: XmlFields): string {
  let out = '';
  for (const [name, value] of fields) {
    if (value === null || value === undefined) continue;
    out += Array.isArray(value) ? `<${name}>${render(value)}</${name}>` : `<${name}>${xmlEscape(String(value))}</${name}>`;
  }
  return out;
}

/** A whole document: the root element in S3's namespace. */
export function xmlDocument(root: string, fields: XmlFields): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<${root} xmlns="${S3_NAMESPACE}">${render(fields)}</${root}>`;
}

export function errorDocument(err: S3Error, requestId: string, resource: string): string {
  const fields: XmlFields = [['Code', err.code], ['Message', err.message], ...Object.entries(err.fields), ['Resource', resource], ['RequestId', requestId]];
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error>${render(fields)}</Error>`;
}

/** An element of a parsed document: its local name, children and text. */
export interface XmlElement {
  name: string;
  children: XmlElement[];
  text: string;
}

const MAX_DEPTH = 32;

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|amp|lt|gt|quot|apos);/g, (_m, e: string) => {
    if (e[0] === '#') {
      const code = e[1] === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      if (code > 0x10ffff) throw s3Errors.malformedXml();
      return String.fromCodePoint(code);
    }
    return ({ amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" } as Record<string, string>)[e]!;
  });
}

/** Parses an XML document into its root element; MalformedXML when it is not one or has more than `maxElements`. */
export function parseXml(source: string, maxElements = Infinity): XmlElement {
  let i = 0;
  let elements = 0;
  const fail = () => s3Errors.malformedXml();
  const skipMisc = () => {
    for (;;) {
      while (i < source.length && /\s/.test(source[i]!)) i++;
      if (source.startsWith('<?', i)) {
        const end = source.indexOf('?>', i);
        if (end < 0) throw fail();
        i = end + 2;
      } else if (source.startsWith('<!--', i)) {
        const end = source.indexOf('-->', i);
        if (end < 0) throw fail();
        i = end + 3;
      } else if (source.startsWith('<!', i)) {
        // DOCTYPE and anything like it: no entity of a client's is ever expanded.
        throw fail();
      } else return;
    }
  };
  const element = (depth: number): XmlElement => {
    if (depth > MAX_DEPTH || source[i] !== '<' || ++elements > maxElements) throw fail();
    const open = /^<([A-Za-z_][\w.:-]*)((?:\s+[\w.:-]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>/.exec(source.slice(i, i + 4096));
    if (!open) throw fail();
    i += open[0].length;
    const qualified = open[1]!;
    const el: XmlElement = { name: qualified.includes(':') ? qualified.slice(qualified.indexOf(':') + 1) : qualified, children: [], text: '' };
    if (open[3] === '/') return el;
    for (;;) {
      if (i >= source.length) throw fail();
      if (source.startsWith('</', i)) {
        const close = /^<\/([A-Za-z_][\w.:-]*)\s*>/.exec(source.slice(i, i + 512));
        if (!close || close[1] !== qualified) throw fail();
        i += close[0].length;
        return el;
      }
      if (source.startsWith('<![CDATA[', i)) {
        const end = source.indexOf(']]>', i);
        if (end < 0) throw fail();
        el.text += source.slice(i + 9, end);
        i = end + 3;
      } else if (source.startsWith('<!--', i)) {
        const end = source.indexOf('-->', i);
        if (end < 0) throw fail();
        i = end + 3;
      } else if (source[i] === '<') {
        el.children.push(element(depth + 1));
      } else {
        const next = source.indexOf('<', i);
        if (next < 0) throw fail();
        el.text += decodeEntities(source.slice(i, next));
        i = next;
      }
    }
  };
  skipMisc();
  const root = element(0);
  skipMisc();
  if (i !== source.length) throw fail();
  return root;
}

/** The first child of this name, or undefined. */
export const childOf = (el: XmlElement, name: string): XmlElement | undefined => el.children.find((c) => c.name === name);
export const childrenOf = (el: XmlElement, name: string): XmlElement[] => el.children.filter((c) => c.name === name);
