/**
 * The process an edge makes its image variants in (transform-pool.ts). Its threads, libvips'
 * among them, run at a lower priority than the edge's, so the edge's event loop gets a core
 * first while variants are made; and an image that crashes libvips takes this process down,
 * not the edge.
 */
import { readdirSync } from 'node:fs';
import os from 'node:os';
import { VariantError, transform } from './transform.js';
import type { TransformReply, TransformRequest } from './transform-pool.js';

/**
 * Every thread Node has started so far gets the niceness the edge asked for (argv[2]); the
 * threads started later (libuv's, libvips') inherit it from the thread that starts them.
 * On Linux a niceness belongs to a thread, so the edge's own call reached only the main one.
 */
function lowerPriority(nice: number): void {
  let threads: string[];
  try {
    threads = readdirSync('/proc/self/task');
  } catch {
    threads = [String(process.pid)];
  }
  for (const tid of threads) {
    try {
      os.setPriority(Number(tid), nice);
    } catch {
      // Gone, or not permitted: it keeps the priority it has.
    }
  }
}

const nice = Number(process.argv[2]);
if (Number.isInteger(nice)) lowerPriority(nice);

function reply(message: TransformReply): void {
  // The edge may have gone; nothing is left to answer then.
  if (process.connected) process.send!(message);
}

process.on('message', (request: TransformRequest) => {
  const input = request.memory ? { memory: Buffer.from(request.memory.buffer, request.memory.byteOffset, request.memory.byteLength) } : { path: request.path };
  transform(input, request.params, request.out, request.maxPixels).then(
    (bytes) => reply({ id: request.id, bytes }),
    (err: unknown) => {
      const e = err instanceof VariantError ? err : new VariantError('invalid_image', 'The image could not be decoded.');
      reply({ id: request.id, error: { status: e.status, code: e.code, message: e.message } });
    },
  );
});
// The edge stopped or died: so does its helper.
process.on('disconnect', () => process.exit(0));
