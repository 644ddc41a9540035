/**
 * Decodes the base64 text of a JSON part's `body` as it arrives (origin/chunk-body.ts), in
 * byte ranges of any length, into pooled 1 MiB buffers handed to the part writer as they fill.
 */
import type { PartWriter } from '../core/ports.js';
import { POOL_BUFFER_BYTES, giveBack, takeBuffer } from '../core/buffer-pool.js';

const EQUALS = 0x3d;
const BATCH_BYTES = POOL_BUFFER_BYTES;
/**
 * Base64 text is decoded through a string, in slices this long: a string under V8's large
 * object size dies young and costs a scavenge, where 1 MiB strings would pile up for full GCs.
 */
const TEXT_SLICE = 64 * 1024;

/** Whether a raw control character (never valid inside a JSON string) is in the range. */
export function hasControlChar(buf: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (buf[i]! < 0x20) return true;
  return false;
}

/**
 * Decodes base64 text fed as byte ranges of any length, checking every character, into
 * a reused 1 MiB buffer that is handed to the writer whenever it fills.
 */
export class Base64Decoder {
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
