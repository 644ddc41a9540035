/**
 * A stand-in for the ServerResponse of a feed stream (src/feed/streams.ts): it records what is
 * written, and its socket takes nothing once `full` is set, until `drain()`.
 */
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';

export class FakeResponse extends EventEmitter {
  full = false;
  destroyed = false;
  writableLength = 0;
  readonly written: string[] = [];
  get writableNeedDrain(): boolean {
    return this.full;
  }
  writeHead(): this {
    return this;
  }
  write(text: string): boolean {
    this.written.push(text);
    if (this.full) this.writableLength += text.length;
    return !this.full;
  }
  drain(): void {
    this.full = false;
    this.writableLength = 0;
    this.emit('drain');
  }
  end(): void {
    this.destroy();
  }
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.emit('close');
  }
  /** As the feed takes it. */
  get res(): ServerResponse {
    return this as unknown as ServerResponse;
  }
}
