/**
 * One source's copy of a file into the cache's temporary directory: gathered into 1 MiB
 * writes, hashed as it arrives, synced before it counts, and checked against the file's
 * size and SHA-256. Any failure removes the temporary file, so a partial copy never lingers.
 * A tap (a parent edge's, for its children) gets every byte as it comes, and is ended as soon
 * as the copy is checked, before the disk has it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { HotFill } from '../core/hot-bytes.js';
import type { FillSource } from './sources.js';
import type { EdgeFile } from './state.js';

const WRITE_BATCH = 1 << 20;

/** A whole, checked copy waiting to be kept. */
export interface Fetched {
  tmp: string;
  /** The bytes, when the file is small enough to be kept in memory too. */
  memory?: Buffer;
}

export interface CopyOptions {
  tmpDir: string;
  keepInMemory: boolean;
  /** Called whenever the source shows it is alive (a byte, a 102). */
  alive: () => void;
  /** Handed every byte as it arrives; ended once the copy is checked, failed otherwise. */
  tap?: HotFill | null;
}

export async function copyFromSource(source: FillSource, file: EdgeFile, via: readonly string[], o: CopyOptions): Promise<Fetched | 'not_found'> {
  const tmp = join(o.tmpDir, randomBytes(8).toString('hex'));
  const hash = createHash('sha256');
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    const out = await open(tmp, 'wx', 0o600);
    let found: 'ok' | 'not_found';
    try {
      const batch = Buffer.allocUnsafeSlow(WRITE_BATCH);
      let used = 0;
      const fill = async (chunk: Buffer) => {
        for (let at = 0; at < chunk.length;) {
          const n = chunk.copy(batch, used, at);
          used += n;
          at += n;
          if (used === WRITE_BATCH) {
            await out.write(batch, 0, used);
            used = 0;
          }
        }
      };
      found = await source.fetch(file, (chunk) => {
        hash.update(chunk);
        size += chunk.length;
        if (size > file.size) throw new Error(`the ${source.kind} sent more than ${file.size} bytes for ${file.file_id}`);
        // The chunk may be a view of a buffer the source reuses: keep a copy.
        if (o.keepInMemory) chunks.push(Buffer.from(chunk));
        o.tap?.write(chunk);
        if (chunk.length < WRITE_BATCH - used) {
          chunk.copy(batch, used);
          used += chunk.length;
          return undefined;
        }
        return fill(chunk);
      }, o.alive, via);
      if (found === 'ok') {
        if (size !== file.size || hash.digest('hex') !== file.sha256) throw new Error(`the bytes of ${file.file_id} did not match their record`);
        o.tap?.end();
      }
      if (used > 0) await out.write(batch, 0, used);
      // Durable before it is kept: a copy that survives a crash is whole.
      await out.sync();
    } finally {
      await out.close();
    }
    if (found === 'not_found') {
      o.tap?.fail(new Error(`the ${source.kind} has no ${file.file_id}`));
      await rm(tmp, { force: true });
      return 'not_found';
    }
    return { tmp, ...(o.keepInMemory ? { memory: Buffer.concat(chunks, size) } : {}) };
  } catch (err) {
    o.tap?.fail(err instanceof Error ? err : new Error(String(err)));
    await rm(tmp, { force: true });
    throw err;
  }
}
