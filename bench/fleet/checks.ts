// What the contract promises once the origin has answered, counted per check.

import { errorCode, header, log, type HttpResponse } from "../common.js";

export interface Check {
  description: string;
  passed: number;
  total: number;
  /** The first few failures, as text. */
  failures: string[];
}

export const CHECK_PREWARM_BYTES = "prewarm: GET at random edges is 200, X-Cache: HIT, same bytes";
export const CHECK_DELETED_UNSIGNED = "after delete: unsigned GET at random edges is 404";
export const CHECK_DELETED_SIGNED = "after delete: signed GET at a random edge is 404";
export const CHECK_PRIVATE_UNSIGNED = "after switch to Private: unsigned GET at random edges is 403";
export const CHECK_PRIVATE_SIGNED = "after switch to Private: signed GET at a random edge is 200";
export const CHECK_PUBLIC_UNSIGNED = "after switch to Public: unsigned GET at random edges is 200";

export class Checks {
  readonly list: Check[] = [];

  constructor() {
    for (const d of [CHECK_PREWARM_BYTES, CHECK_DELETED_UNSIGNED, CHECK_DELETED_SIGNED, CHECK_PRIVATE_UNSIGNED, CHECK_PRIVATE_SIGNED, CHECK_PUBLIC_UNSIGNED]) {
      this.get(d);
    }
  }

  private get(description: string): Check {
    let c = this.list.find((x) => x.description === description);
    if (c === undefined) {
      c = { description, passed: 0, total: 0, failures: [] };
      this.list.push(c);
    }
    return c;
  }

  record(description: string, ok: boolean, failure: () => string): void {
    const c = this.get(description);
    c.total++;
    if (ok) c.passed++;
    else {
      const text = failure();
      if (c.failures.length < 5) c.failures.push(text);
      log(`CHECK FAILED: ${description}: ${text}`);
    }
  }

  /** Checks that failed: something stale or wrong was served. */
  get failed(): number {
    return this.list.reduce((n, c) => n + (c.total - c.passed), 0);
  }
}

export function describe(res: HttpResponse): string {
  const code = errorCode(res);
  return `${res.status}${code ? ` ${code}` : ""}${header(res, "x-cache") ? ` X-Cache: ${header(res, "x-cache")}` : ""}`;
}
