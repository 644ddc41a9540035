/** What every tus handler works with, and how it reads a request's bytes. */
import type { FastifyRequest } from 'fastify';
import type { CofferService } from '../../service/service.js';

export interface TusContext {
  service: CofferService;
  /** The origin's public address as it is now (known only after listening when the port was 0). */
  baseUrl: () => string;
  /** How long a client may send nothing while its bytes are read. */
  idleTimeoutMs: number;
  /** The programmatic interface's error answers, for the OpenAPI document. */
  errorResponses: Record<number, unknown>;
}

/** A connection that ended before the body it announced. */
export class BodyCutOff extends Error {
  constructor(received: number, announced: number) {
    super(`the client sent ${received} of the ${announced} bytes it announced`);
    this.name = 'BodyCutOff';
  }
}

/** The body's length as its Content-Length announces it; null for a chunked body. */
export function announcedLength(request: FastifyRequest): number | null {
  const length = request.headers['content-length'];
  return length === undefined ? null : Number(length);
}

/**
 * The request's bytes as they arrive. A client that stalls is dropped after the idle time
 * (the origin turns that timeout off once a handler runs: here it runs while bytes are read).
 * Left early, the request is not destroyed, so an answer can still be sent (with
 * Connection: close, see index.ts). A body shorter than its Content-Length is an error.
 */
export async function* bodyOf(request: FastifyRequest, idleTimeoutMs: number): AsyncGenerator<Buffer> {
  const socket = request.raw.socket;
  socket?.setTimeout(idleTimeoutMs);
  const announced = announcedLength(request);
  let received = 0;
  const chunks = request.raw[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await chunks.next();
      if (next.done) break;
      const chunk = next.value as Buffer;
      received += chunk.length;
      yield chunk;
    }
    if (announced !== null && received !== announced) throw new BodyCutOff(received, announced);
  } finally {
    socket?.setTimeout(0);
  }
}
