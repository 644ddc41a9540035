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

/** Printable ASCII without a quote or a backslash: JSON text as it stands. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

function jsonString(v: string | null): string {
  if (v === null) return 'null';
  return PLAIN.test(v) ? `"${v}"` : JSON.stringify(v);
}

let cachedSecond = NaN;
let cachedPrefix = '';

/** `new Date(ms).toISOString()`, with the part up to the second made once per second. */
export function isoTime(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== cachedSecond) {
    const iso = new Date(second * 1000).toISOString();
    // Years past 9999 print differently: leave those to Date.
    if (iso.length !== 24) return new Date(ms).toISOString();
    cachedSecond = second;
    cachedPrefix = iso.slice(0, 20);
  }
  const frac = ms - second * 1000;
  return cachedPrefix + (frac < 10 ? '00' : frac < 100 ? '0' : '') + frac + 'Z';
}

/**
 * One log line: the same text as JSON.stringify of the fields in this order, built without
 * it, since the line is made for every request and must cost next to nothing.
 */
export function accessLine(a: Answered): string {
  return `{"time":"${isoTime(a.time)}","method":${jsonString(a.method)},"file_id":${jsonString(a.fileId)},"status":${a.status},`
    + `"bytes":${a.bytes},"complete":${a.complete},"duration_ms":${a.durationMs},"cache":${jsonString(a.cache)},`
    + `"client":${jsonString(a.client)},"range":${jsonString(a.range)}}`;
}

export class AccessLog {
  private lines: string[] = [];
  private size = 0;
  private writing = false;
  private pendingBytes = 0;
  /** Armed by the first line after a flush: an edge nobody asks anything never wakes for the log. */
  private timer: NodeJS.Timeout | null = null;
  /** Lines dropped because the destination fell behind. */
  dropped = 0;

  private constructor(private readonly out: Writable, private readonly ownsOut: boolean) {
    out.on('error', () => {});
  }

  static open(destination: string): AccessLog {
    if (destination === 'stdout') return new AccessLog(process.stdout, false);
    return new AccessLog(createWriteStream(destination, { flags: 'a', mode: 0o600 }), true);
  }

  readonly answered = (a: Answered): void => {
    const line = accessLine(a);
    if (this.pendingBytes + this.size > MAX_PENDING_BYTES) {
      this.dropped++;
      return;
    }
    this.lines.push(line);
    this.size += line.length + 1;
    if (this.size >= FLUSH_BYTES) this.flush();
    else if (this.timer === null) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.flush();
      }, FLUSH_MS);
      this.timer.unref();
    }
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
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.writing = false;
    this.flush();
    if (this.ownsOut) await new Promise<void>((resolve) => this.out.end(resolve));
  }
}
