// What the fleet's work costs in CPU, per unit: an origin and N edges started as bench:fleet
// starts them, then, read from /proc/<pid>/task/*/schedstat (nanoseconds, every thread):
//   idle         each edge's and the origin's CPU per second with nothing changing;
//   per change   each edge's and the origin's CPU per visibility switch, switched back to back;
//                with fills too, measured again after them (a starved round must leave no change dearer);
//   per fill     each edge's CPU per verified copy of a new 10 MiB file (every edge asked once
//                with HEAD, which joins the fill), and the origin's per copy sent.
// Run it at a few fleet sizes to see which cost grows with the fleet: a fill that costs the same
// at every size is the copy itself; what grows with the size is every edge's background times
// how long the round takes (bench/README.md, "Where a 200-edge prewarm's CPU goes").
//
//   npx tsx bench/fleet/cost.ts --edges 20 [--tiers P] [--settle 2] [--seconds 10] [--switches 200] [--fills 3]
//   (--switches 0 or --fills 0 leaves that part out)

import fs from "node:fs";
import { performance } from "node:perf_hooks";
import { randomBytes } from "node:crypto";
import { fmt, installExitHandlers, log, makeWorkDir, releaseWatchdog, sleep, stopAll } from "../common.js";
import { parseOptions } from "./options.js";
import { originCounters } from "./origin-counters.js";
import { edgeGet } from "./probe.js";
import { started, startEdges, startOrigin, type Edge, type Fleet } from "./procs.js";
import { complete, sendParts } from "./upload.js";

/** CPU of every thread of `pid` so far, ms (0 once it is gone). */
function threadsCpuMs(pid: number): number {
  try {
    let ns = 0;
    for (const t of fs.readdirSync(`/proc/${pid}/task`)) ns += Number(fs.readFileSync(`/proc/${pid}/task/${t}/schedstat`, "utf8").split(" ")[0]);
    return ns / 1e6;
  } catch {
    return 0;
  }
}

/** `parentsMs`: of `edgesMs`, the parents' (with --tiers; 0 without). */
interface Spent { originMs: number; edgesMs: number; parentsMs: number; wallMs: number }

async function measure(f: Fleet, work: () => Promise<void>): Promise<Spent> {
  const sum = (parents: boolean) => f.edges.reduce((n, e) => (parents && e.parents.length > 0 ? n : n + threadsCpuMs(e.child.pid)), 0);
  const parentsOnly = f.edges.some((e) => e.parents.length > 0);
  const o0 = threadsCpuMs(f.origin.pid);
  const e0 = sum(false);
  const p0 = parentsOnly ? sum(true) : 0;
  const t0 = performance.now();
  await work();
  return { originMs: threadsCpuMs(f.origin.pid) - o0, edgesMs: sum(false) - e0, parentsMs: parentsOnly ? sum(true) - p0 : 0, wallMs: performance.now() - t0 };
}

function takeNumber(args: string[], name: string, fallback: number): number {
  const at = args.indexOf(name);
  return at >= 0 ? Number(args.splice(at, 2)[1]) : fallback;
}

async function untilHit(edges: Edge[], path: string): Promise<void> {
  await Promise.all(edges.map(async (e) => {
    for (let i = 0; i < 600; i++) {
      const res = await edgeGet(e, path, "HEAD");
      if (res.status === 200 && res.headers["x-cache"] === "HIT") return;
      await sleep(20);
    }
    throw new Error(`edge ${e.index + 1} never served ${path} as a HIT`);
  }));
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const seconds = takeNumber(args, "--seconds", 10);
  // How long the fleet idles after its last edge started before the idle window is measured.
  const settle = takeNumber(args, "--settle", 2);
  const switches = takeNumber(args, "--switches", 200);
  const fills = takeNumber(args, "--fills", 3);
  const opts = parseOptions(args);
  if (opts === null) return;
  installExitHandlers();
  const workDir = makeWorkDir(opts.tmpBase, "coffer-cost-", false);
  try {
    const f = await startOrigin(opts, workDir);
    await startEdges(opts, f, 0, Math.max(1, opts.tiers));
    await startEdges(opts, f, Math.max(1, opts.tiers), opts.edges);
    const n = opts.edges;
    await sleep(settle * 1000);
    const idle = await measure(f, () => sleep(seconds * 1000));
    log(`idle: each edge ${fmt((idle.edgesMs / n / idle.wallMs) * 1000, 2)} ms CPU per s; origin ${fmt((idle.originMs / idle.wallMs) * 1000, 1)} ms per s`);

    if (switches > 0) await perChange(f, switches);
    if (fills > 0) await perFill(f, opts.prewarmBytes, fills, idle.edgesMs / n / idle.wallMs);
    // Again after the fills: a fill round that starved the edges must not leave changes dearer.
    if (switches > 0 && fills > 0) await perChange(f, switches, "after the fills, ");
  } finally {
    await stopAll(started);
    releaseWatchdog();
  }
}

async function perChange(f: Fleet, switches: number, when = ""): Promise<void> {
  const n = f.edges.length;
  const small = await complete(f.api, await sendParts(f.api, randomBytes(4096), "switched.bin"));
  await untilHit(f.edges, small.deliveryPath);
  const flip = async (count: number) => {
    for (let i = 0; i < count; i++) await f.api.post("/collections/file/update", { file_id: small.fileId, visibility: i % 2 === 0 ? "Private" : "Public" });
  };
  await flip(20);
  const before = await originCounters(f);
  const change = await measure(f, () => flip(switches));
  const after = await originCounters(f);
  log(`${when}per switch (${switches} back to back, ${fmt(change.wallMs / switches, 1)} ms each): each edge ${fmt((change.edgesMs / n / switches) * 1000, 0)} µs; origin ${fmt(change.originMs / switches, 2)} ms; ` +
    `acknowledgements by request ${fmt((after.ackRequests - before.ackRequests) / switches, 1)} per switch, acknowledgement streams ended ${after.ackStreams - before.ackStreams}`);
}

/** `idleRate`: each edge's idle CPU, ms per ms, to set beside its fill. */
async function perFill(f: Fleet, bytes: number, fills: number, idleRate: number): Promise<void> {
  const n = f.edges.length;
  let fill: Spent = { originMs: 0, edgesMs: 0, parentsMs: 0, wallMs: 0 };
  for (let r = 0; r <= fills; r++) {
    const pending = await sendParts(f.api, randomBytes(bytes), `fill-${r}.bin`);
    await sleep(300);
    const spent = await measure(f, async () => untilHit(f.edges, (await complete(f.api, pending)).deliveryPath));
    // The first round warms every edge's fill path up; it is not counted.
    if (r > 0) fill = { originMs: fill.originMs + spent.originMs, edgesMs: fill.edgesMs + spent.edgesMs, parentsMs: fill.parentsMs + spent.parentsMs, wallMs: fill.wallMs + spent.wallMs };
    await f.api.post("/collections/file/delete", { file_id: pending.fileId });
  }
  const mib = bytes / 2 ** 20;
  log(`per fill of ${fmt(mib, 0)} MiB (${fills} rounds, ${fmt(fill.wallMs / fills / 1000, 2)} s each until every edge's HIT): ` +
    `each edge ${fmt(fill.edgesMs / n / fills, 1)} ms; origin ${fmt(fill.originMs / fills / n, 1)} ms per edge filled`);
  log(`of each edge's fill, its idle rate times the round: ${fmt(idleRate * (fill.wallMs / fills), 1)} ms`);
  const parents = f.edges.filter((e) => e.parents.length === 0).length;
  if (fill.parentsMs > 0 && parents < n) {
    const children = n - parents;
    const sentGiB = (children * bytes) / 2 ** 30;
    log(`of it, the ${parents} parents: each ${fmt(fill.parentsMs / parents / fills, 1)} ms per round ` +
      `(${fmt(fill.parentsMs / fills / 1000 / sentGiB, 2)} s per GiB sent to children); the ${children} children: each ${fmt((fill.edgesMs - fill.parentsMs) / children / fills, 1)} ms`);
  }
}

main().then(() => process.exit(0), (err: unknown) => {
  log(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
