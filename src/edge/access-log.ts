/**
 * The edge's access log (COFFER_EDGE_ACCESS_LOG=path|stdout): one JSON line per request,
 * gathered in memory and written in batches, so a request never waits on the log. When the
 * destination cannot keep up, lines beyond a bound are dropped and counted, never queued
 * without limit.
 */
import { createWriteStream } from 'node:fs';
import type { Writable } from 'node:stream';
import type { Answered } from './metrics.js';

const FLUSH_MS = 200;
const FLUSH_BYTES = 64 * 1024;
/** Lines held while the destination is busy; past this they are dropped. */
const MAX_PENDING_BYTES = 8 * 1024 * 1024;

export class AccessLog {
  private lines: string[] = [];
  private size = 0;
  private writing = false;
  private pendingBytes = 0;
  private readonly timer: NodeJS.Timeout;
  /** Lines dropped because the destination fell behind. */
  dropped = 0;

  private constructor(private readonly out: Writable, private readonly ownsOut: boolean) {
    this.timer = setInterval(() => this.flush(), FLUSH_MS);
    this.timer.unref();
    out.on('error', () => {});
  }

  static open(destination: string): AccessLog {
    if (destination === 'stdout') return new AccessLog(process.stdout, false);
    return new AccessLog(createWriteStream(destination, { flags: 'a', mode: 0o600 }), true);
  }

  readonly answered = (a: Answered): void => {
    const line = JSON.stringify({
      time: new Date(a.time).toISOString(), method: a.method, file_id: a.fileId, status: a.status, bytes: a.bytes, complete: a.complete,
      duration_ms: a.durationMs, cache: a.cache, client: a.client, range: a.range,
    });
    if (this.pendingBytes + this.size > MAX_PENDING_BYTES) {
      this.dropped++;
      return;
    }
    this.lines.push(line);
    this.size += line.length + 1;
    if (this.size >= FLUSH_BYTES) this.flush();
  };

  private flush(): void {
    if (this.lines.length === 0 || this.writing) return;
    const chunk = this.lines.join('\n') + '\n';
    this.lines = [];
    this.size = 0;
    this.pendingBytes += chunk.length;
    const ok = this.out.write(chunk, () => {
      this.pendingBytes -= chunk.length;
    });
    if (!ok) {
      this.writing = true;
      this.out.once('drain', () => {
        this.writing = false;
        this.flush();
      });
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.writing = false;
    this.flush();
    if (this.ownsOut) await new Promise<void>((resolve) => this.out.end(resolve));
  }
}
