/**
 * The XML bodies S3 clients send (DeleteObjects, CompleteMultipartUpload, CreateBucket's
 * configuration), bounded by S3's own limits before any parse: a body longer, or with more
 * markup, than its largest allowed form could need is MalformedXML without being built into a
 * tree. Operations read them only after the signature held and the bucket is in reach, so a
 * stranger's body is never parsed.
 */
import { s3Errors } from './errors.js';
import { readSmallBody, type Payload } from './payload.js';
import { parseXml, type XmlElement } from './xml.js';

export interface XmlBounds {
  /** What the items are, for the message. */
  what: string;
  /** S3's limit on the items of one body. */
  items: number;
  /** Elements an item may hold, its own included. */
  elementsPerItem: number;
  /** Bytes an item may take, its markup and escapes included. */
  bytesPerItem: number;
}

/** Room for the declaration, the root and its few single elements (Quiet, a LocationConstraint). */
const ROOT_ELEMENTS = 8;
const ROOT_BYTES = 1024;

/** S3: at most 1000 keys; an Object holds Key (≤ 1024 bytes), VersionId, ETag, LastModifiedTime, Size. */
export const DELETE_BODY: XmlBounds = { what: 'keys', items: 1000, elementsPerItem: 8, bytesPerItem: 2048 };
/** S3: at most 10,000 parts; a Part holds PartNumber, ETag and checksums. */
export const COMPLETE_BODY: XmlBounds = { what: 'parts', items: 10_000, elementsPerItem: 8, bytesPerItem: 512 };
/** A LocationConstraint and the other settings of a new bucket (its location, type, tags). */
export const BUCKET_CONFIGURATION_BODY: XmlBounds = { what: 'settings', items: 64, elementsPerItem: 4, bytesPerItem: 1024 };

export const maxBytesOf = (b: XmlBounds): number => ROOT_BYTES + b.items * b.bytesPerItem;
export const maxElementsOf = (b: XmlBounds): number => ROOT_ELEMENTS + b.items * b.elementsPerItem;

/**
 * Whether a body has more '<' than its elements could: each element opens with one and closes
 * with at most one more. Stops counting at the bound, so a long body costs a single pass at most.
 */
function tooMuchMarkup(body: Buffer, maxElements: number): boolean {
  const bound = 2 * maxElements + ROOT_ELEMENTS;
  let count = 0;
  for (let at = body.indexOf(0x3c); at >= 0; at = body.indexOf(0x3c, at + 1)) {
    if (++count > bound) return true;
  }
  return false;
}

/** A body's root element, checked against its bounds first; null for a blank body. */
export async function readXmlBody(payload: Payload, bounds: XmlBounds): Promise<XmlElement | null> {
  const maxBytes = maxBytesOf(bounds);
  const tooLarge = () => s3Errors.malformedXml(`The XML you provided is larger than a body of at most ${bounds.items} ${bounds.what} needs (${maxBytes} bytes).`);
  if (payload.length > maxBytes) throw tooLarge();
  const body = await readSmallBody(payload, maxBytes);
  if (body.length > maxBytes) throw tooLarge();
  const maxElements = maxElementsOf(bounds);
  if (tooMuchMarkup(body, maxElements)) throw s3Errors.malformedXml(`The XML you provided has more elements than a body of at most ${bounds.items} ${bounds.what} can.`);
  const text = body.toString('utf8').trim();
  return text === '' ? null : parseXml(text, maxElements);
}
