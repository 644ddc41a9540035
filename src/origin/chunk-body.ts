/**
 * Reads a file-progress body as it arrives. The base64 text of `body` is decoded and
 * written to a part writer chunk by chunk; everything else, with `body` left as "",
 * is kept as a small JSON text and parsed at the end, so the whole request is still
 * checked as JSON. A 5 MiB chunk never sits in memory as one string.
 */
import { errors } from '../core/errors.js';
import type { PartWriter } from '../core/ports.js';
import { POOL_BUFFER_BYTES, giveBack, takeBuffer } from '../core/buffer-pool.js';

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

const EQUALS = 0x3d;
/** Everything but `body` is six short fields: this much room is plenty, and keeps parsing it cheap. */
export const CHUNK_FIELDS_LIMIT = 64 * 1024;
/** The fields are flat; nesting beyond this is refused as it is read, before anything parses it. */
const MAX_NESTING = 32;
const BATCH_BYTES = POOL_BUFFER_BYTES;
/**
 * Base64 text is decoded through a string, in slices this long: a string under V8's large
 * object size dies young and costs a scavenge, where 1 MiB strings would pile up for full GCs.
 */
const TEXT_SLICE = 64 * 1024;

function hasControlChar(buf: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (buf[i]! < 0x20) return true;
  return false;
}

/**
 * Decodes base64 text fed as byte ranges of any length, checking every character, into
 * a reused 1 MiB buffer that is handed to the writer whenever it fills.
 */
class Base64Decoder {
  invalid = false;
  /** Set when the text found invalid held a raw control character: malformed JSON, not just bad base64. */
  controlChar = false;
  private readonly carry = Buffer.alloc(4);
  private carryLength = 0;
  private padding = -1;
  private batch: Buffer | null = takeBuffer();
  private used = 0;

  constructor(private readonly writer: PartWriter) {}

  async feed(buf: Buffer, start: number, end: number): Promise<void> {
    if (this.invalid || start >= end) return;
    if (this.padding >= 0) {
      // Only more padding may follow padding.
      for (let i = start; i < end; i++) if (buf[i] !== EQUALS) return this.fail(buf, start, end);
      this.padding += end - start;
      return;
    }
    let dataEnd = end;
    const eq = buf.indexOf(EQUALS, start);
    if (eq >= 0 && eq < end) {
      for (let i = eq; i < end; i++) if (buf[i] !== EQUALS) return this.fail(buf, start, end);
      this.padding = end - eq;
      dataEnd = eq;
    }
    let pos = start;
    if (this.carryLength > 0) {
      while (this.carryLength < 4 && pos < dataEnd) this.carry[this.carryLength++] = buf[pos++]!;
      if (this.carryLength < 4) return;
      await this.decode(this.carry, 0, 4);
      if (this.invalid) return this.fail(buf, start, end);
      this.carryLength = 0;
    }
    const whole = pos + (dataEnd - pos) - ((dataEnd - pos) % 4);
    while (pos < whole) {
      const next = Math.min(whole, pos + TEXT_SLICE);
      await this.decode(buf, pos, next);
      if (this.invalid) return this.fail(buf, start, end);
      pos = next;
    }
    while (pos < dataEnd) this.carry[this.carryLength++] = buf[pos++]!;
  }

  /** Decodes whole groups of four characters. */
  private async decode(buf: Buffer, from: number, to: number): Promise<void> {
    const expected = ((to - from) / 4) * 3;
    if (BATCH_BYTES - this.used < expected) await this.flush();
    // Node skips characters outside the alphabet; a short result means there were some.
    const written = this.batch!.write(buf.toString('latin1', from, to), this.used, 'base64');
    if (written !== expected) this.invalid = true;
    else this.used += written;
  }

  private async flush(): Promise<void> {
    if (this.used === 0) return;
    const filled = this.batch!.subarray(0, this.used);
    this.used = 0;
    await this.writer.write(filled);
  }

  /** Marks the text invalid; the carried characters were never checked, so they count too. */
  private fail(buf: Buffer, start: number, end: number): void {
    this.invalid = true;
    if (hasControlChar(buf, start, end) || hasControlChar(this.carry, 0, this.carryLength)) this.controlChar = true;
  }

  async finish(): Promise<void> {
    try {
      if (this.invalid) return;
      const rest = this.carryLength;
      if (rest === 1 || this.padding > 2 || (this.padding > 0 && (rest + this.padding) % 4 !== 0)) {
        return this.fail(this.carry, 0, 0);
      }
      if (rest > 0) {
        if (BATCH_BYTES - this.used < 3) await this.flush();
        const written = this.batch!.write(this.carry.toString('latin1', 0, rest), this.used, 'base64');
        if (written !== rest - 1) return this.fail(this.carry, 0, 0);
        this.used += written;
      }
      await this.flush();
    } finally {
      this.release();
    }
  }

  release(): void {
    if (this.batch) giveBack(this.batch);
    this.batch = null;
  }
}

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
