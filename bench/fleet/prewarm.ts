// One prewarm round: a new Public file, complete-upload timed, then every edge polled until
// it serves the file as a HIT; the origin's CPU and blob bytes over the round.

import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { header, median, pickRandom, sha256 } from "../common.js";
import { CHECK_PREWARM_BYTES, describe, type Checks } from "./checks.js";
import type { Options } from "./options.js";
import { originCounters, originCpuMs } from "./origin-counters.js";
import { edgeGet, waitAllHit, type HitWait } from "./probe.js";
import type { Edge, Fleet } from "./procs.js";
import { complete, sendParts } from "./upload.js";

export interface PrewarmRound {
  edges: number;
  completeMs: number;
  firstHitMs: number | null;
  medianHitMs: number | null;
  /** Until the last edge reported HIT; null when some edge did not within the limit. */
  allHitMs: number | null;
  /** Until the last parent edge reported HIT (children can fill from it); null without tiers or when one did not. */
  parentsHitMs: number | null;
  edgesHit: number;
  firstAnswer: Record<string, number>;
  otherStatuses: Record<string, number>;
  /** Each 503 seen while waiting (probe.ts). */
  unavailable: HitWait["unavailable"];
  /** The origin's CPU from complete-upload's request until every edge was a HIT, ms. */
  originCpuMs: number;
  /** Of complete-upload's time, how long the change waited for the edges (the origin's own histogram). */
  ackWaitMs: number | null;
  /** Bytes the origin sent edges for this file (its own counters). */
  originBytes: number;
  /** All edges' CPU over the same span, ms. */
  edgesCpuMs: number;
  /** This process's CPU over the same span (mostly the HEADs polling every edge), ms. */
  benchCpuMs: number;
  waitMs: number;
}

export async function prewarmRound(fleet: Fleet, edges: Edge[], opts: Options, name: string, checks: Checks, signal: AbortSignal): Promise<PrewarmRound> {
  const data = randomBytes(opts.prewarmBytes);
  const pending = await sendParts(fleet.api, data, name, signal);
  const edgesCpu = (): number => edges.reduce((n, e) => n + (e.child.cpuMs() ?? 0), 0);
  const counters0 = await originCounters(fleet);
  const origin0 = originCpuMs(fleet);
  const edges0 = edgesCpu();
  const bench0 = process.cpuUsage();
  const up = await complete(fleet.api, pending, signal);
  const wait = await waitAllHit(edges, up.deliveryPath, up.completedAt, opts, signal);
  const waitMs = performance.now() - up.completedAt;
  const origin1 = originCpuMs(fleet);
  const edges1 = edgesCpu();
  const bench1 = process.cpuUsage(bench0);
  const counters1 = await originCounters(fleet);
  const hits = wait.hitMs.filter((x): x is number => x !== null);
  const parentUrls = new Set(edges.flatMap((e) => e.parents));
  const parentHits = edges.filter((e) => parentUrls.has(e.url)).map((e) => wait.hitMs[edges.indexOf(e)] ?? null);
  for (const edge of pickRandom(edges, opts.verify)) {
    const res = await edgeGet(edge, up.deliveryPath);
    const ok = res.status === 200 && header(res, "x-cache") === "HIT" && res.body.length === data.length && sha256(res.body) === sha256(data);
    checks.record(CHECK_PREWARM_BYTES, ok, () => `edge ${edge.index + 1}: ${describe(res)}, ${res.body.length} bytes`);
  }
  // Keep the caches small: the prewarm file goes away after the round (not counted in the delete figures).
  await fleet.api.post("/collections/file/delete", { file_id: up.fileId }, signal, 60_000);
  return {
    edges: edges.length,
    completeMs: up.completeMs,
    firstHitMs: hits.length > 0 ? Math.min(...hits) : null,
    medianHitMs: median(hits),
    allHitMs: hits.length === edges.length ? Math.max(...hits) : null,
    parentsHitMs: parentHits.length === 0 || parentHits.includes(null) ? null : Math.max(...(parentHits as number[])),
    edgesHit: hits.length,
    firstAnswer: wait.firstAnswer,
    otherStatuses: wait.otherStatuses,
    unavailable: wait.unavailable,
    originCpuMs: origin1 - origin0,
    originBytes: counters1.blobBytes - counters0.blobBytes,
    ackWaitMs: counters1.acks > counters0.acks ? (counters1.ackWaitS - counters0.ackWaitS) * 1000 : null,
    edgesCpuMs: edges1 - edges0,
    benchCpuMs: (bench1.user + bench1.system) / 1000,
    waitMs,
  };
}
