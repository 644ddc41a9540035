/**
 * Every request body an origin receives, counted as Node's parser hands it over. Each
 * network read arrives as a buffer of its own whose memory is freed only when V8 collects
 * the buffer's owner, and V8 counts such memory toward a collection only every 64 MB or so;
 * the origin's memory policy (start/memory.ts) collects sooner, by bytes received.
 */
import { IncomingMessage } from 'node:http';

let listener: ((bytes: number) => void) | null = null;

/** The request class of the origin's servers: an IncomingMessage that reports body bytes. */
export class ReceivingMessage extends IncomingMessage {
  override push(chunk: unknown, encoding?: BufferEncoding): boolean {
    if (listener !== null && chunk instanceof Uint8Array) listener(chunk.length);
    return super.push(chunk, encoding);
  }
}

/** Calls `fn` with the size of every body piece any origin server receives; null stops. */
export function onReceivedBytes(fn: ((bytes: number) => void) | null): void {
  listener = fn;
}
