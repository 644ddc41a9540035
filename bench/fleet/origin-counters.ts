// The origin's own counters: the bytes it sent edges (its /metrics) and its CPU time.

import { request } from "../common.js";
import type { Fleet } from "./procs.js";

export interface OriginCounters {
  /** coffer_http_sent_bytes_total summed over the routes that carry a file's bytes to edges. */
  blobBytes: number;
  /** coffer_change_ack_seconds: the time changes waited for every live edge, summed, and their number. */
  ackWaitS: number;
  acks: number;
  /** Acknowledgements sent one request each (`POST /_edge/ack`), and streams of them opened (`POST /_edge/acks`). */
  ackRequests: number;
  ackStreams: number;
}

export async function originCounters(fleet: Fleet): Promise<OriginCounters> {
  const res = await request(`${fleet.originUrl}/metrics`, { headers: { Authorization: `Bearer ${fleet.metricsToken}` }, timeoutMs: 30_000 });
  if (res.status !== 200) throw new Error(`origin /metrics answered ${res.status}`);
  const out: OriginCounters = { blobBytes: 0, ackWaitS: 0, acks: 0, ackRequests: 0, ackStreams: 0 };
  for (const line of res.body.toString("utf8").split("\n")) {
    const m = /^(coffer_http_sent_bytes_total|coffer_http_requests_total|coffer_change_ack_seconds_sum|coffer_change_ack_seconds_count)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const value = Number(m[3]);
    if (m[1] === "coffer_http_requests_total") {
      if (/route="\/_edge\/ack"/.test(m[2] ?? "")) out.ackRequests += value;
      else if (/route="\/_edge\/acks"/.test(m[2] ?? "")) out.ackStreams += value;
      continue;
    }
    if (m[1] === "coffer_change_ack_seconds_sum") out.ackWaitS += value;
    else if (m[1] === "coffer_change_ack_seconds_count") out.acks += value;
    else if (/route="[^"]*blob[^"]*"/.test(m[2] ?? "")) out.blobBytes += value;
  }
  return out;
}

/** The origin's user + system CPU in ms (ticks of 10 ms). */
export function originCpuMs(fleet: Fleet): number {
  const ms = fleet.origin.cpuMs();
  if (ms === null) throw new Error("the origin is gone");
  return ms;
}
