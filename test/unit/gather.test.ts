/** Gathered part writes (src/service/uploads/gather.ts): few large writes, no copy where the writer can gather. */
import { describe, expect, it } from 'vitest';
import { Gather } from '../../src/service/uploads/gather.js';
import type { PartWriter } from '../../src/core/ports.js';

class Recorder implements PartWriter {
  bytesWritten = 0;
  readonly calls: Buffer[][] = [];
  async write(chunk: Buffer): Promise<void> {
    this.calls.push([Buffer.from(chunk)]);
    this.bytesWritten += chunk.length;
  }
  async discard(): Promise<void> {}
}

class GatheringRecorder extends Recorder {
  async writev(chunks: readonly Buffer[]): Promise<void> {
    this.calls.push([...chunks]);
    for (const c of chunks) this.bytesWritten += c.length;
  }
}

const chunks = (n: number, size: number): Buffer[] => Array.from({ length: n }, (_, i) => Buffer.alloc(size, i));

describe('Gather', () => {
  it('hands a gathering writer the very chunks it was given, about 1 MiB at a time', async () => {
    const writer = new GatheringRecorder();
    const gather = new Gather(writer);
    const input = chunks(40, 64 * 1024);
    for (const c of input) await gather.write(c);
    await gather.flush();
    expect(writer.calls.map((call) => call.length)).toEqual([16, 16, 8]);
    expect(writer.calls.flat().every((c, i) => c === input[i])).toBe(true);
    expect(writer.bytesWritten).toBe(40 * 64 * 1024);
  });

  it('copies into 1 MiB writes for a writer that cannot gather, the bytes in order', async () => {
    const writer = new Recorder();
    const gather = new Gather(writer);
    const input = chunks(20, 100_000);
    for (const c of input) await gather.write(c);
    await gather.flush();
    gather.release();
    expect(writer.calls.map((call) => call[0]!.length)).toEqual([1 << 20, 2_000_000 - (1 << 20)]);
    expect(Buffer.concat(writer.calls.flat()).equals(Buffer.concat(input))).toBe(true);
  });
});
