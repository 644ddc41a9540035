/** COFFER_METRICS_TOKEN's check, without prom-client: an edge refuses a scrape before loading it. */
import { createHash, timingSafeEqual } from 'node:crypto';
import { errors } from '../core/errors.js';

const digest = (v: string) => createHash('sha256').update(v).digest();

/** Checks a scrape against COFFER_METRICS_TOKEN when one is set; open otherwise. */
export function checkScrape(token: string | undefined, authorization: string | undefined): void {
  if (!token) return;
  const given = /^Bearer (\S+)$/i.exec(authorization ?? '')?.[1];
  if (!given || !timingSafeEqual(digest(given), digest(token))) {
    throw errors.unauthorized('Send "Authorization: Bearer <COFFER_METRICS_TOKEN>" to read the metrics.');
  }
}
