/**
 * Reads a file-progress body as it arrives. The base64 text of `body` is decoded and
 * written to a part writer chunk by chunk; everything else, with `body` left as "",
 * is kept as a small JSON text and parsed at the end, so the whole request is still
 * checked as JSON. A 5 MiB chunk never sits in memory as one string.
 */
import { errors } from '../core/errors.js';
import type { PartWriter } from '../core/ports.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const BASE64_CHAR = /^[A-Za-z0-9+/=_-]$/;

export interface ChunkBody {
  /** The request with `body` as "". */
  fields: unknown;
  /** The decoded chunk, when `body` was a string. */
  writer: PartWriter | null;
  invalidBase64: boolean;
}

/** Decodes base64 text fed in pieces of any length, checking every character. */
class Base64Decoder {
  invalid = false;
  private carry = '';
  private dataChars = 0;
  private padding = -1;

  constructor(private readonly writer: PartWriter) {}

  async feed(text: string): Promise<void> {
    if (this.invalid || text.length === 0) return;
    if (this.padding >= 0) {
      // Only more padding may follow padding.
      if (!/^=*$/.test(text)) this.invalid = true;
      else this.padding += text.length;
      return;
    }
    let s = this.carry + text;
    const eq = s.indexOf('=');
    if (eq >= 0) {
      const tail = s.slice(eq);
      if (!/^=*$/.test(tail)) {
        this.invalid = true;
        return;
      }
      this.padding = tail.length;
      s = s.slice(0, eq);
    }
    const whole = s.length - (s.length % 4);
    if (whole > 0) {
      const bytes = Buffer.from(s.slice(0, whole), 'base64');
      // Node skips characters outside the alphabet; a short result means there were some.
      if (bytes.length !== (whole / 4) * 3) {
        this.invalid = true;
        return;
      }
      await this.writer.write(bytes);
    }
    this.dataChars += whole;
    this.carry = s.slice(whole);
  }

  async finish(): Promise<void> {
    if (this.invalid) return;
    const rest = this.carry.length;
    if (rest === 1 || this.padding > 2) {
      this.invalid = true;
      return;
    }
    if (this.padding > 0 && (rest + this.padding) % 4 !== 0) {
      this.invalid = true;
      return;
    }
    if (rest > 0) {
      const bytes = Buffer.from(this.carry, 'base64');
      if (bytes.length !== rest - 1) {
        this.invalid = true;
        return;
      }
      await this.writer.write(bytes);
    }
  }
}

export async function readChunkBody(
  source: AsyncIterable<Buffer>,
  openWriter: () => Promise<PartWriter>,
  limit: number,
  declaredLength?: number,
): Promise<ChunkBody> {
  if (declaredLength !== undefined && declaredLength > limit) throw errors.payloadTooLarge(limit);
  const malformed = () => errors.invalidRequest('The body is not valid JSON.');

  const skeleton: Buffer[] = [];
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
  let unicodeDigits = '';
  let isMalformed = false;

  try {
    for await (const chunk of source) {
      total += chunk.length;
      if (total > limit) throw errors.payloadTooLarge(limit);
      let pos = 0;
      let segStart = 0;
      while (pos < chunk.length) {
        if (inBody) {
          if (bodyEscape > 0) {
            const c = chunk[pos]!;
            pos++;
            if (bodyEscape === 1) {
              if (c === 0x75 /* u */) {
                bodyEscape = 2;
                unicodeDigits = '';
              } else {
                bodyEscape = 0;
                if (c === 0x2f /* / */) await decoder!.feed('/');
                else if ('"\\bfnrt'.includes(String.fromCharCode(c))) decoder!.invalid = true;
                else isMalformed = true;
              }
            } else {
              unicodeDigits += String.fromCharCode(c);
              if (unicodeDigits.length === 4) {
                bodyEscape = 0;
                if (!/^[0-9a-fA-F]{4}$/.test(unicodeDigits)) isMalformed = true;
                else {
                  const ch = String.fromCharCode(parseInt(unicodeDigits, 16));
                  if (BASE64_CHAR.test(ch)) await decoder!.feed(ch);
                  else decoder!.invalid = true;
                }
              }
            }
            segStart = pos;
            continue;
          }
          const q = chunk.indexOf(QUOTE, pos);
          const b = chunk.indexOf(BACKSLASH, pos);
          const stop = b >= 0 && (q < 0 || b < q) ? b : q;
          const end = stop < 0 ? chunk.length : stop;
          if (end > pos) {
            const text = chunk.toString('latin1', pos, end);
            await decoder!.feed(text);
            // Raw control characters make the JSON itself malformed, not just the base64.
            if (decoder!.invalid && /[\u0000-\u001f]/.test(text)) isMalformed = true;
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
            skeleton.push(chunk.subarray(segStart, pos + 1));
            writer ??= await openWriter();
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
      if (!inBody && segStart < chunk.length) skeleton.push(chunk.subarray(segStart));
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
    if (writer) await writer.discard().catch(() => {});
    throw err;
  }
}
