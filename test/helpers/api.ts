/** Assertions on answers of the programmatic interface and the edges, shared by every test. */
import type { IncomingHttpHeaders } from 'node:http';
import { expect } from 'vitest';

/** An answer as the tests' request helpers return it: fetch-style headers and parsed body, or node headers and `json`. */
export interface Answer {
  status: number;
  body?: unknown;
  /** The body parsed as JSON, where `body` holds the raw bytes. */
  json?: unknown;
  headers?: Headers | IncomingHttpHeaders;
}

function contentType(headers: Answer['headers']): string | undefined {
  if (!headers) return undefined;
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get('content-type') ?? undefined;
  const v = (headers as IncomingHttpHeaders)['content-type'];
  return v === undefined ? undefined : String(v);
}

/**
 * Asserts a failure in the contract's shape (§2): its status and code, a JSON body holding only
 * `error` with `code`, a message a person can read (no stack) and an object of `details`, of
 * which `details` given here must be a subset.
 */
export function expectError(res: Answer, status: number, code: string, details?: Record<string, unknown> | string, where = ''): void {
  // A string in place of the details names the case in messages.
  if (typeof details === 'string') [details, where] = [undefined, details];
  const body = ('json' in res ? res.json : res.body) as any;
  const shown = `${where ? `${where}: ` : ''}${Buffer.isBuffer(res.body) ? res.body.toString().slice(0, 300) : JSON.stringify(body)}`;
  expect({ status: res.status, code: body?.error?.code }, shown).toEqual({ status, code });
  const type = contentType(res.headers);
  if (res.headers) expect(type, shown).toMatch(/^application\/json/);
  expect(Object.keys(body), shown).toEqual(['error']);
  expect(Object.keys(body.error).sort(), shown).toEqual(['code', 'details', 'message']);
  expect(body.error.code, shown).toMatch(/^[a-z]+(_[a-z0-9]+)*$/);
  expect(typeof body.error.message, shown).toBe('string');
  expect(body.error.message.length, shown).toBeGreaterThan(0);
  expect(body.error.message, shown).not.toMatch(/\n\s+at /);
  expect(typeof body.error.details, shown).toBe('object');
  expect(body.error.details, shown).not.toBeNull();
  expect(Array.isArray(body.error.details), shown).toBe(false);
  if (details) expect(body.error.details, shown).toMatchObject(details);
}
