// What an idle fleet costs, per edge: an origin and N edges started as bench:fleet starts them,
// then the CPU (utime + stime from /proc) of each over a quiet span. Faster than a whole
// bench:fleet run when only the heartbeats, acknowledgements and pings are of interest.
//
//   npx tsx bench/fleet/idle.ts --edges 40 [--tiers P] [--seconds 10]

import { fmt, installExitHandlers, log, makeWorkDir, releaseWatchdog, sleep, stopAll } from "../common.js";
import { parseOptions } from "./options.js";
import { started, startEdges, startOrigin } from "./procs.js";

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const at = args.indexOf("--seconds");
  const seconds = at >= 0 ? Number(args.splice(at, 2)[1]) : 10;
  const opts = parseOptions(args);
  if (opts === null) return;
  installExitHandlers();
  const workDir = makeWorkDir(opts.tmpBase, "coffer-idle-", false);
  try {
    const f = await startOrigin(opts, workDir);
    await startEdges(opts, f, 0, Math.max(1, opts.tiers));
    await startEdges(opts, f, Math.max(1, opts.tiers), opts.edges);
    await sleep(2000);
    const read = () => ({ origin: f.origin.cpuMs() ?? 0, edges: f.edges.map((e) => e.child.cpuMs() ?? 0) });
    const a = read();
    await sleep(seconds * 1000);
    const b = read();
    const perEdge = b.edges.map((x, i) => (x - a.edges[i]!) / seconds).sort((x, y) => x - y);
    const total = perEdge.reduce((n, x) => n + x, 0);
    log(`idle ${seconds} s, ${opts.edges} edges: origin ${fmt((b.origin - a.origin) / seconds, 1)} ms CPU per s ` +
      `(${fmt((b.origin - a.origin) / seconds / opts.edges, 2)} per edge); each edge median ${fmt(perEdge[perEdge.length >> 1]!, 2)} ms/s, ` +
      `mean ${fmt(total / opts.edges, 2)} ms/s, max ${fmt(perEdge[perEdge.length - 1]!, 2)} ms/s`);
  } finally {
    await stopAll(started);
    releaseWatchdog();
  }
}

main().then(() => process.exit(0), (err: unknown) => {
  log(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
