/**
 * Usage (contract §11): edges report what they served in batches, and the origin sums it per
 * file and UTC day. Eventually consistent: a report arrives within an edge's report interval,
 * and a report lost with an edge is not counted.
 */
import { errors } from '../core/errors.js';
import type { Caller } from '../core/access.js';
import type { UsageRow } from '../core/ports.js';
import type { UsageRequest, UsageResponse } from '../core/api-usage.js';
import type { ServiceContext } from './context.js';
import { authorize } from './policy.js';

/** yyyymmdd of a Unix ms time, in UTC. */
export const dayOf = (ms: number): number => {
  const d = new Date(ms);
  return d.getUTCFullYear() * 10_000 + (d.getUTCMonth() + 1) * 100 + d.getUTCDate();
};
const isoDay = (day: number): string => `${Math.floor(day / 10_000)}-${String(Math.floor(day / 100) % 100).padStart(2, '0')}-${String(day % 100).padStart(2, '0')}`;

export interface UsageReport {
  file_id: string;
  downloads: number;
  bytes: number;
}

export class Usage {
  constructor(private readonly c: ServiceContext) {}

  /** Adds an edge's report, counted on today's (UTC) row. */
  async record(reports: UsageReport[]): Promise<void> {
    if (reports.length === 0) return;
    const day = dayOf(this.c.now());
    const rows: UsageRow[] = reports.map((r) => ({ file_id: r.file_id, day, downloads: r.downloads, bytes: r.bytes }));
    await this.c.meta.transaction((tx) => tx.usage.add(rows), { durable: false });
  }

  /** Uploads started and neither completed nor aborted, for the metrics. */
  openUploads(): Promise<number> {
    return this.c.meta.countOpenUploads();
  }

  /** Totals per day for the last `days` days (today included), every day listed, zeros too. */
  async byDay(caller: Caller, req: UsageRequest): Promise<UsageResponse> {
    authorize(caller, 'usage.read');
    const days = req.days ?? 30;
    if (!Number.isInteger(days) || days < 1 || days > 366) throw errors.invalidField('invalid_days', 'days', '"days" must be a whole number from 1 to 366.');
    const now = this.c.now();
    const list: number[] = [];
    for (let i = days - 1; i >= 0; i--) list.push(dayOf(now - i * 86_400_000));
    const found = new Map((await this.c.meta.read.usage.byDay(list[0]!)).map((r) => [r.day, r]));
    return {
      days: list.map((d) => ({ date: isoDay(d), downloads: found.get(d)?.downloads ?? 0, bytes: found.get(d)?.bytes ?? 0 })),
    };
  }
}
