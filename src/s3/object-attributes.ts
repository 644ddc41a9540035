/**
 * GetObjectAttributes (contract §12, docs/s3.md): what S3 knows of an object without its bytes,
 * the attributes named in `x-amz-object-attributes` (ETag, Checksum, ObjectParts, StorageClass,
 * ObjectSize). ObjectParts pages a multipart object's parts with `x-amz-max-parts` and
 * `x-amz-part-number-marker`; an object stored whole has none. The caller needs what HeadObject
 * needs (read files), decided by the same rule.
 */
import { etagOf, httpDate, noBody, xmlAnswer, type S3Handler, type S3Request } from './context.js';
import { s3Errors } from './errors.js';
import { storedChecksum } from './object-headers.js';
import { partsOf, type ObjectPart } from './object-parts.js';
import { requireObject } from './objects.js';
import { NULL_VERSION, checkVersionId } from './versions.js';
import type { XmlFields } from './xml.js';

const ATTRIBUTES = ['ETag', 'Checksum', 'ObjectParts', 'StorageClass', 'ObjectSize'] as const;
type Attribute = (typeof ATTRIBUTES)[number];
const MAX_PARTS = 1000;

/** The attributes asked for; S3's errors for none or an unknown one. */
function wanted(r: S3Request): Set<Attribute> {
  const raw = r.headers.get('x-amz-object-attributes') ?? '';
  const names = raw.split(',').map((n) => n.trim()).filter((n) => n !== '');
  if (names.length === 0) throw s3Errors.invalidArgument('The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty', 'x-amz-object-attributes', raw);
  const unknown = names.find((n) => !(ATTRIBUTES as readonly string[]).includes(n));
  if (unknown !== undefined) throw s3Errors.invalidArgument('Invalid attribute name specified.', 'x-amz-object-attributes', unknown);
  return new Set(names as Attribute[]);
}

/** A whole number header within bounds, or the fallback when absent. */
function intHeader(r: S3Request, name: string, fallback: number, max: number): number {
  const raw = r.headers.get(name);
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!/^\d{1,10}$/.test(raw.trim())) throw s3Errors.invalidArgument(`${name} must be a whole number.`, name, raw);
  return Math.min(Number(raw.trim()), max);
}

/** One page of parts after the part number `marker`, as S3's ObjectParts. */
function partsPage(parts: ObjectPart[], marker: number, max: number): XmlFields {
  const after = parts.filter((p) => p.number > marker);
  const page = after.slice(0, max);
  const truncated = after.length > page.length;
  return [
    ['PartsCount', parts.length], ['PartNumberMarker', marker], ['NextPartNumberMarker', page.length > 0 ? page[page.length - 1]!.number : marker],
    ['MaxParts', max], ['IsTruncated', truncated],
    ...page.map((p): [string, XmlFields] => ['Part', [['PartNumber', p.number], ['Size', p.size]]]),
  ];
}

export const getObjectAttributes: S3Handler = async (r) => {
  await noBody(r);
  const versioned = checkVersionId(r);
  const asked = wanted(r);
  const max = intHeader(r, 'x-amz-max-parts', MAX_PARTS, MAX_PARTS);
  const marker = intHeader(r, 'x-amz-part-number-marker', 0, 10_000);
  const file = await requireObject(r, r.bucket!, r.key!);
  const fields: XmlFields = [];
  // S3 writes this ETag without quotes.
  if (asked.has('ETag')) fields.push(['ETag', etagOf(file)]);
  const checksum = asked.has('Checksum') ? storedChecksum(file) : null;
  if (checksum) fields.push(['Checksum', [[checksum.element, checksum.value], ['ChecksumType', 'FULL_OBJECT']]]);
  const parts = asked.has('ObjectParts') ? await partsOf(r, file) : null;
  if (parts) fields.push(['ObjectParts', partsPage(parts, marker, max)]);
  if (asked.has('StorageClass')) fields.push(['StorageClass', 'STANDARD']);
  if (asked.has('ObjectSize')) fields.push(['ObjectSize', file.size]);
  const answer = xmlAnswer('GetObjectAttributesResponse', fields);
  answer.headers!['last-modified'] = httpDate(file.completed_at ?? file.updated_at);
  if (versioned) answer.headers!['x-amz-version-id'] = NULL_VERSION;
  return answer;
};
