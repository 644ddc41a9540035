/** The JSON-chunk upload flow (contract §3): initiate, one base64 part per chunk, complete. */
import type { JsonClient } from './client.js';

export interface UploadOptions {
  /** Sends every part at once instead of one after another. */
  parallel?: boolean;
}

/** Uploads bytes through the three steps with any client that POSTs (a TestOrigin, `jsonClient`); returns the ready record. */
export async function upload(client: JsonClient, bytes: Buffer, fields: Record<string, unknown> = {}, opts: UploadOptions = {}): Promise<any> {
  const init = await client.post('/collections/upload/file', { name: 'file.bin', visibility: 'Public', size: bytes.length, file_type: 'other', ...fields });
  if (init.status !== 200) throw new Error(`initiate: ${init.status} ${JSON.stringify(init.body)}`);
  const s = init.body;
  const part = async (n: number) => {
    const chunk = bytes.subarray((n - 1) * s.chunk_size, n * s.chunk_size);
    const r = await client.post('/collections/upload/file-progress', { bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: n, body: chunk.toString('base64') });
    if (r.status !== 200) throw new Error(`part ${n}: ${r.status} ${JSON.stringify(r.body)}`);
  };
  const numbers = Array.from({ length: s.part_count as number }, (_, i) => i + 1);
  if (opts.parallel) await Promise.all(numbers.map(part));
  else for (const n of numbers) await part(n);
  const done = await client.post('/collections/upload/complete-upload', { file_id: s.fileId });
  if (done.status !== 200) throw new Error(`complete: ${done.status} ${JSON.stringify(done.body)}`);
  return done.body;
}
