/**
 * The headers of an edge's answers: a file's, built once per file and kind of answer and
 * reused for every request that gets it (the hot path does no string work), and the JSON
 * error answer of contract §2.
 */
import type http from 'node:http';
import { SANDBOX_CSP, contentDisposition, isActiveContent, sendableType } from '../core/user-bytes.js';
import type { EdgeFile } from './state.js';
import { statusOf, type ErrorCode } from '../core/error-codes.js';

export class AnswerHeaders {
  /** Per file, the four kinds of answer: index signed × 2 + download. */
  private readonly byFile = new WeakMap<EdgeFile, Array<string[] | undefined>>();
  private readonly hits = new WeakMap<string[], string[]>();

  /** `publicCache`: the Cache-Control of unsigned answers. */
  constructor(readonly publicCache: string) {}

  /** What every answer with the file's bytes carries, signed or not, inline or as a download. */
  base(file: EdgeFile, signed: boolean, download: boolean): string[] {
    const key = (signed ? 2 : 0) + (download ? 1 : 0);
    let byKind = this.byFile.get(file);
    const cached = byKind?.[key];
    if (cached) return cached;
    const active = isActiveContent(file.content_type);
    const headers = [
      'Content-Type', sendableType(file.content_type),
      'ETag', `"${file.sha256}"`,
      'Last-Modified', new Date(file.completed_at).toUTCString(),
      'Accept-Ranges', 'bytes',
      'X-Content-Type-Options', 'nosniff',
      'Content-Disposition', contentDisposition(file.name, download || active),
      'Cache-Control', signed ? 'private, no-store' : this.publicCache,
    ];
    if (active) headers.push('Content-Security-Policy', SANDBOX_CSP);
    if (!byKind) {
      byKind = [undefined, undefined, undefined, undefined];
      this.byFile.set(file, byKind);
    }
    byKind[key] = headers;
    return headers;
  }

  /** The complete header list of the commonest answer, a whole file from the cache. */
  hit(base: string[], size: number): string[] {
    let full = this.hits.get(base);
    if (!full) {
      full = [...base, 'Content-Length', String(size), 'X-Cache', 'HIT'];
      this.hits.set(base, full);
    }
    return full;
  }
}

/** An error answer of contract §2, its status from the table of error codes. */
export function sendError(res: http.ServerResponse, code: ErrorCode, message: string, extra: string[] = [], details: Record<string, unknown> = {}): void {
  const body = JSON.stringify({ error: { code, message, details } });
  res.writeHead(statusOf(code), ['Content-Type', 'application/json; charset=utf-8', 'Content-Length', String(Buffer.byteLength(body)), 'Cache-Control', 'no-store', 'X-Content-Type-Options', 'nosniff', ...extra]);
  res.end(body);
}
