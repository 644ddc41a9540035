/**
 * Counts what this edge served, per file, and reports it to the origin in batches (every
 * interval, or sooner when many files are waiting), never per request. A report that fails
 * is dropped rather than sent twice: usage may run a little low, never high. With a status
 * (status.ts), every report carries it as `edge`, sent even when no file was served, so the
 * origin hears from an idle edge every interval too.
 */
import type { Answered } from './metrics.js';
import type { OriginClient } from './origin-client.js';

const MAX_FILES = 10_000;

export class UsageMeter {
  private counts = new Map<string, [number, number]>();
  private readonly timer: NodeJS.Timeout;
  private sending: Promise<void> | null = null;

  constructor(
    private readonly origin: OriginClient,
    private readonly headers: () => Record<string, string>,
    intervalMs: number,
    private readonly onError: (err: unknown) => void,
    private readonly status?: () => unknown,
  ) {
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  /** A GET whose bytes went out counts as a download of its file, unless it is a preview (`preview=1`). */
  readonly answered = (a: Answered): void => {
    if (a.fileId === null || a.method !== 'GET' || (a.status !== 200 && a.status !== 206) || !a.complete || a.preview) return;
    const c = this.counts.get(a.fileId);
    if (c) {
      c[0] += 1;
      c[1] += a.bytes;
    } else {
      this.counts.set(a.fileId, [1, a.bytes]);
      if (this.counts.size >= MAX_FILES) void this.flush();
    }
  };

  /** Sends what has been counted so far; resolves when the report is answered (or dropped). */
  flush(): Promise<void> {
    if (this.sending) return this.sending;
    if (this.counts.size === 0 && !this.status) return Promise.resolve();
    const files = Object.fromEntries(this.counts);
    this.counts = new Map();
    const body = JSON.stringify(this.status ? { files, edge: this.status() } : { files });
    this.sending = new Promise<void>((resolve) => {
      const req = this.origin.request('/_edge/usage', {
        method: 'POST',
        timeout: 10_000,
        headers: { ...this.headers(), 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      }, (res) => {
        res.resume();
        res.on('end', resolve);
        res.on('error', resolve);
        if (res.statusCode !== 200) this.onError(new Error(`usage report answered ${res.statusCode}`));
      });
      req.on('timeout', () => req.destroy(new Error('usage report timed out')));
      req.on('error', (err) => {
        this.onError(err);
        resolve();
      });
      req.end(body);
    }).finally(() => {
      this.sending = null;
    });
    return this.sending;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
