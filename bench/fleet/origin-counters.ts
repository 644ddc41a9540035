// The origin's own counters: the bytes it sent edges (its /metrics) and its CPU time.

import { request } from "../common.js";
import type { Fleet } from "./procs.js";

/** coffer_http_sent_bytes_total summed over the routes that carry a file's bytes to edges. */
export async function originBlobBytes(fleet: Fleet): Promise<number> {
  const res = await request(`${fleet.originUrl}/metrics`, { headers: { Authorization: `Bearer ${fleet.metricsToken}` }, timeoutMs: 30_000 });
  if (res.status !== 200) throw new Error(`origin /metrics answered ${res.status}`);
  let sum = 0;
  for (const line of res.body.toString("utf8").split("\n")) {
    const m = /^coffer_http_sent_bytes_total\{([^}]*)\} (\S+)$/.exec(line);
    if (m && /route="[^"]*blob[^"]*"/.test(m[1]!)) sum += Number(m[2]);
  }
  return sum;
}

/** The origin's user + system CPU in ms (ticks of 10 ms). */
export function originCpuMs(fleet: Fleet): number {
  const ms = fleet.origin.cpuMs();
  if (ms === null) throw new Error("the origin is gone");
  return ms;
}
