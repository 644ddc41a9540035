/**
 * One webhook attempt on the wire (contract §11): a POST of the event with its signed headers,
 * to a receiver reached only at public addresses (service/url-guard.ts) unless private ones are
 * allowed, answered within a timeout, and the start of its answer kept for the deliveries
 * list. The sender's retry policy (sender.ts) takes it as a function, so another way of
 * sending can stand in for it.
 */
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { guardedLookup, isSpecialAddress } from '../url-guard.js';

export interface WebhookRequest {
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  /** Receivers may be on loopback and private addresses. */
  allowPrivate: boolean;
  timeoutMs: number;
}

/** What an attempt came to: the receiver's status and the start of its answer, or why there was none. */
export interface WebhookResponse {
  status: number | null;
  response: string | null;
  error: string | null;
}

export type WebhookPost = (request: WebhookRequest) => Promise<WebhookResponse>;

const RESPONSE_KEPT = 1024;
const RESPONSE_READ_LIMIT = 64 * 1024;

/** Sends with node's HTTP client; never rejects: a failure is the answer's `error`. */
export const httpPost: WebhookPost = async (r) => {
  const url = new URL(r.url);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  // A literal address never goes through the lookup below: checked here instead.
  if (!r.allowPrivate && isIP(host) && isSpecialAddress(host)) return { status: null, response: null, error: 'refused: a non-public address' };
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    const req = client.request(url, {
      method: 'POST',
      lookup: guardedLookup(r.allowPrivate) as never,
      timeout: r.timeoutMs,
      headers: { ...r.headers, 'content-length': String(r.body.length) },
    }, (res) => {
      const kept: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        if (size < RESPONSE_KEPT) kept.push(c.subarray(0, RESPONSE_KEPT - size));
        size += c.length;
        // The status is what counts; an endless answer is not read to its end.
        if (size > RESPONSE_READ_LIMIT) {
          res.destroy();
          resolve({ status: res.statusCode ?? 0, response: Buffer.concat(kept).toString('utf8'), error: null });
        }
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, response: Buffer.concat(kept).toString('utf8'), error: null }));
      res.on('error', (err) => resolve({ status: res.statusCode ?? null, response: null, error: err.message }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${r.timeoutMs} ms`)));
    req.on('error', (err) => resolve({ status: null, response: null, error: err.message.slice(0, 300) }));
    req.end(r.body);
  });
};
