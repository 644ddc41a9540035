/**
 * Reads a file-progress body as it arrives. The base64 text of `body` is decoded and
 * written to a part writer chunk by chunk; everything else, with `body` left as "",
 * is kept as a small JSON text and parsed at the end, so the whole request is still
 * checked as JSON. A 5 MiB chunk never sits in memory as one string.
 */
import { errors } from '../core/errors.js';
import type { PartWriter } from '../core/ports.js';
import { Base64Decoder, hasControlChar } from './base64-decoder.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Hex digit values by byte, -1 for anything else. */
const HEX_VALUE = new Int8Array(256).fill(-1);
for (let i = 0; i < 16; i++) HEX_VALUE['0123456789abcdef'.charCodeAt(i)] = i;
for (let i = 10; i < 16; i++) HEX_VALUE['ABCDEF'.charCodeAt(i - 10)] = i;
/** The characters either base64 alphabet (and its padding) uses. */
const IS_BASE64 = new Uint8Array(256);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-') IS_BASE64[c.charCodeAt(0)] = 1;
/** JSON's one-letter escapes other than \/: valid JSON, but never base64. */
const IS_SHORT_ESCAPE = new Uint8Array(256);
for (const c of '"\\bfnrt') IS_SHORT_ESCAPE[c.charCodeAt(0)] = 1;
/** Characters written as escapes are gathered here and decoded in batches, not one by one. */
const ESCAPED_BATCH = 4096;

export interface ChunkBody {
  /** The request with `body` as "". */
  fields: unknown;
  /** The decoded chunk, when `body` was a string. */
  writer: PartWriter | null;
  invalidBase64: boolean;
}

/** Everything but `body` is six short fields: this much room is plenty, and keeps parsing it cheap. */
export const CHUNK_FIELDS_LIMIT = 64 * 1024;
/** The fields are flat; nesting beyond this is refused as it is read, before anything parses it. */
const MAX_NESTING = 32;

interface EscapeRun {
  pos: number;
  /** Characters gathered in the batch so far. */
  length: number;
  /** A \u escape with a character that is not a hex digit: malformed JSON. */
  malformed: boolean;
  /** A well-formed escape of a character that is not base64. */
  invalid: boolean;
}

/**
 * Decodes the whole `\uXXXX` escapes that follow one another from `run.pos`, into `out`
 * until it is full. A plain function: locals of the async parser live on the heap.
 */
function decodeEscapeRun(chunk: Buffer, run: EscapeRun, out: Buffer): void {
  let pos = run.pos;
  let n = run.length;
  const end = chunk.length - 6;
  while (n < out.length && pos <= end && chunk[pos] === BACKSLASH && chunk[pos + 1] === 0x75 /* u */) {
    const d1 = HEX_VALUE[chunk[pos + 2]!]!;
    const d2 = HEX_VALUE[chunk[pos + 3]!]!;
    const d3 = HEX_VALUE[chunk[pos + 4]!]!;
    const d4 = HEX_VALUE[chunk[pos + 5]!]!;
    pos += 6;
    const value = (d1 << 12) | (d2 << 8) | (d3 << 4) | d4;
    if ((d1 | d2 | d3 | d4) < 0) run.malformed = true;
    else if (value < 256 && IS_BASE64[value]) out[n++] = value;
    else run.invalid = true;
  }
  run.pos = pos;
  run.length = n;
}

/**
 * The fields that came before `body`, read from the skeleton so far (which ends with the
 * body's opening quote), or null when that text is not a JSON object's start.
 */
function fieldsBefore(skeleton: Buffer[]): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(Buffer.concat(skeleton).toString('utf8') + '"}');
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * `openWriter` is told the fields that came before `body` (null when none could be read), so
 * that the part can be opened where it belongs before its bytes arrive.
 */
export async function readChunkBody(
  source: AsyncIterable<Buffer>,
  openWriter: (fieldsBeforeBody: Record<string, unknown> | null) => Promise<PartWriter>,
  limit: number,
  declaredLength?: number,
): Promise<ChunkBody> {
  if (declaredLength !== undefined && declaredLength > limit) throw errors.payloadTooLarge(limit);
  const malformed = () => errors.invalidRequest('The body is not valid JSON.');

  const skeleton: Buffer[] = [];
  let skeletonBytes = 0;
  const keep = (piece: Buffer) => {
    skeletonBytes += piece.length;
    if (skeletonBytes > CHUNK_FIELDS_LIMIT) {
      throw errors.invalidRequest(`The fields besides "body" may take at most ${CHUNK_FIELDS_LIMIT} bytes.`);
    }
    skeleton.push(piece);
  };
  let writer: PartWriter | null = null;
  let decoder: Base64Decoder | null = null;
  let total = 0;

  // Lexer state for everything outside the body string.
  let depth = 0;
  let inString = false;
  let escaped = false;
  let expectKey = false;
  let keyStart = -1;
  let keyParts: Buffer[] = [];
  let lastKey: string | null = null;
  let awaitingValue = false;
  let bodySeen = false;
  let inBody = false;
  // Escape state inside the body string: 0 none, 1 after "\", 2..5 reading \uXXXX digits.
  let bodyEscape = 0;
  let unicodeValue = 0;
  let unicodeBad = false;
  const escapedChars = Buffer.allocUnsafe(ESCAPED_BATCH);
  let escapedLength = 0;
  const flushEscaped = async () => {
    const n = escapedLength;
    escapedLength = 0;
    await decoder!.feed(escapedChars, 0, n);
  };
  let isMalformed = false;
  const run: EscapeRun = { pos: 0, length: 0, malformed: false, invalid: false };

  try {
    for await (const chunk of source) {
      total += chunk.length;
      if (total > limit) throw errors.payloadTooLarge(limit);
      let pos = 0;
      let segStart = 0;
      // -2: not looked for yet in this chunk; -1: none left in it.
      let nextQuote = -2;
      let nextBackslash = -2;
      while (pos < chunk.length) {
        if (inBody) {
          if (bodyEscape > 0) {
            const c = chunk[pos]!;
            pos++;
            if (bodyEscape === 1) {
              if (c === 0x75 /* u */) {
                bodyEscape = 2;
                unicodeValue = 0;
                unicodeBad = false;
              } else {
                bodyEscape = 0;
                if (c === 0x2f /* / */) escapedChars[escapedLength++] = c;
                else if (IS_SHORT_ESCAPE[c]) decoder!.invalid = true;
                else isMalformed = true;
              }
            } else {
              const digit = HEX_VALUE[c]!;
              if (digit < 0) unicodeBad = true;
              unicodeValue = unicodeValue * 16 + digit;
              if (++bodyEscape === 6) {
                bodyEscape = 0;
                if (unicodeBad) isMalformed = true;
                else if (unicodeValue < 256 && IS_BASE64[unicodeValue]) escapedChars[escapedLength++] = unicodeValue;
                else decoder!.invalid = true;
              }
            }
            // An await only once per batch, never per escape.
            if (escapedLength === ESCAPED_BATCH) await flushEscaped();
            segStart = pos;
            continue;
          }
          // A run of whole \uXXXX escapes is decoded in one plain loop, outside this async function.
          for (;;) {
            run.pos = pos;
            run.length = escapedLength;
            decodeEscapeRun(chunk, run, escapedChars);
            pos = run.pos;
            escapedLength = run.length;
            if (escapedLength < ESCAPED_BATCH) break;
            await flushEscaped();
          }
          if (run.malformed) isMalformed = true;
          if (run.invalid) decoder!.invalid = true;
          segStart = pos;
          if (pos === chunk.length) continue;
          // Positions found once per chunk and reused while ahead: a body of many escapes stays linear.
          if (nextQuote !== -1 && nextQuote < pos) nextQuote = chunk.indexOf(QUOTE, pos);
          if (nextBackslash !== -1 && nextBackslash < pos) nextBackslash = chunk.indexOf(BACKSLASH, pos);
          const q = nextQuote;
          const b = nextBackslash;
          const stop = b >= 0 && (q < 0 || b < q) ? b : q;
          const end = stop < 0 ? chunk.length : stop;
          // Gathered escapes go out before raw text or the closing quote, not before each next escape.
          if (escapedLength > 0 && (end > pos || stop !== b)) await flushEscaped();
          if (end > pos) {
            await decoder!.feed(chunk, pos, end);
            // Raw control characters make the JSON itself malformed, not just the base64.
            if (decoder!.invalid && (decoder!.controlChar || hasControlChar(chunk, pos, end))) isMalformed = true;
          }
          if (stop < 0) {
            pos = chunk.length;
            segStart = pos;
          } else if (stop === b) {
            bodyEscape = 1;
            pos = stop + 1;
            segStart = pos;
          } else {
            inBody = false;
            awaitingValue = false;
            await decoder!.finish();
            if (decoder!.controlChar) isMalformed = true;
            segStart = stop;
            pos = stop + 1;
          }
          continue;
        }

        const c = chunk[pos]!;
        if (inString) {
          if (escaped) escaped = false;
          else if (c === BACKSLASH) escaped = true;
          else if (c === QUOTE) {
            inString = false;
            if (keyStart >= 0) {
              keyParts.push(chunk.subarray(keyStart, pos + 1));
              const raw = Buffer.concat(keyParts).toString('utf8');
              keyParts = [];
              keyStart = -1;
              try {
                lastKey = JSON.parse(raw) as string;
              } catch {
                lastKey = null;
              }
            }
          }
          pos++;
          continue;
        }
        if (c === QUOTE) {
          if (depth === 1 && awaitingValue && lastKey === 'body') {
            if (bodySeen) isMalformed = true;
            bodySeen = true;
            keep(chunk.subarray(segStart, pos + 1));
            writer ??= await openWriter(fieldsBefore(skeleton));
            decoder = new Base64Decoder(writer);
            inBody = true;
            pos++;
            segStart = pos;
            continue;
          }
          inString = true;
          if (depth === 1 && expectKey) {
            keyStart = pos;
            expectKey = false;
          }
          awaitingValue = false;
        } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
          depth++;
          if (depth > MAX_NESTING) throw malformed();
          expectKey = depth === 1 && c === 0x7b;
          awaitingValue = false;
        } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
          depth--;
          awaitingValue = false;
        } else if (depth === 1 && c === 0x3a /* : */) {
          awaitingValue = true;
        } else if (depth === 1 && c === 0x2c /* , */) {
          expectKey = true;
          awaitingValue = false;
        } else if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) {
          awaitingValue = false;
        }
        pos++;
      }
      if (!inBody && segStart < chunk.length) keep(chunk.subarray(segStart));
      if (keyStart >= 0) {
        // A key split across chunks; the part already pushed to the skeleton is copied too.
        keyParts.push(Buffer.from(chunk.subarray(keyStart)));
        keyStart = 0;
      }
    }
    if (inBody || isMalformed) throw malformed();
    let fields: unknown;
    try {
      fields = JSON.parse(Buffer.concat(skeleton).toString('utf8'));
    } catch {
      throw malformed();
    }
    return { fields, writer, invalidBase64: decoder?.invalid ?? false };
  } catch (err) {
    decoder?.release();
    if (writer) await writer.discard().catch(() => {});
    throw err;
  }
}
