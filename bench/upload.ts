// Upload throughput and memory, side by side in one run (issue 11): @tus/server with its
// file store fed by tus-js-client (the reference), Coffer's JSON parts with "body" first
// and with "body" last, raw parts, Coffer's /tus when the origin has it, and dd with
// conv=fdatasync as the disk's own figure; every Coffer line on each storage configuration.
//
// Run with `npm run bench:upload -- [options]` (builds first) or `npx tsx bench/upload.ts`.
// See bench/README.md and `--help`. Every server is a child process spawned as `node`
// directly, so its pid is the server and /proc/<pid>/status its memory; rounds alternate
// between the lines, every round has a time limit, and the children are killed whenever
// this process exits (bench/common.ts).

import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import {
  Child, ChildFailure, MiB, UsageError, bounded, errorMessage, installExitHandlers, log, makeWorkDir, releaseWatchdog, stopAll,
} from "./common.js";
import { CofferHttp } from "./upload/flows.js";
import { cofferLine, cofferTusLine, ddLine, tusLine, type Line, type Source, type Timing } from "./upload/lines.js";
import { settle } from "./upload/cpu.js";
import { COFFER_KINDS, USAGE, buildName, parseOptions, type Options } from "./upload/options.js";
import { kbToMB, lineResult, renderSummary, summarize, type MemoryResult } from "./upload/report.js";
import { startOrigin, stopPostgres, type Origin } from "./upload/storage.js";
import { hasTus, startTusServer } from "./upload/tus.js";

const RSS_SAMPLE_MS = 50;

const where = (l: Line): string => `${l.label}${l.storage ? ` (${l.storage}${l.build ? `, ${l.build}` : ""})` : ""}`;

/**
 * Samples the servers' VmRSS every 50 ms until stopped: the highest seen per process, and
 * per line while `current` is that line (in kB).
 */
class RssSampler {
  readonly byChild = new Map<Child, number>();
  readonly byLine = new Map<Line, number>();
  current: Line | null = null;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly children: Child[]) {
    this.sample();
    this.timer = setInterval(() => this.sample(), RSS_SAMPLE_MS);
  }

  private sample(): void {
    for (const child of this.children) {
      const kb = child.statusKb("VmRSS");
      if (kb === null) continue;
      this.byChild.set(child, Math.max(kb, this.byChild.get(child) ?? 0));
      const line = this.current;
      if (line && line.server === child) this.byLine.set(line, Math.max(kb, this.byLine.get(line) ?? 0));
    }
  }

  stop(): void {
    clearInterval(this.timer);
    this.sample();
  }
}

/** The larger of the sampled maximum and VmHWM, in MB. */
function peakMB(child: Child, sampledKb: number | null): number | null {
  const hwm = child.statusKb("VmHWM");
  const kb = hwm === null ? sampledKb : sampledKb === null ? hwm : Math.max(hwm, sampledKb);
  return kbToMB(kb);
}

async function run(opts: Options): Promise<number> {
  const workDir = makeWorkDir(opts.tmpBase, "coffer-bench-upload-", opts.keepData);
  log(`work dir: ${workDir}${opts.keepData ? " (kept)" : ""}`);
  log(`generating ${opts.sizeMiB} MiB of random data...`);
  const data = randomBytes(opts.bytes);
  const source: Source = { data, sha256: createHash("sha256").update(data).digest("hex") };

  const children: Child[] = [];
  const origins: Origin[] = [];
  const clients: CofferHttp[] = [];
  const lines: Line[] = [];
  try {
    let tusChild: Child | null = null;
    if (opts.kinds.includes("tus")) {
      const tusDir = path.join(workDir, "tus-data");
      fs.mkdirSync(tusDir);
      const tus = await startTusServer(tusDir, opts.timeoutMs);
      tusChild = tus.child;
      children.push(tus.child);
      lines.push(tusLine(tus.child, tus.endpoint, tusDir, source));
    }
    if (opts.kinds.some((k) => COFFER_KINDS.includes(k))) {
      const builds = [opts.cofferEntry, ...opts.compareEntries];
      for (const storage of opts.storage) {
        // Other builds run beside the first on the embedded configuration only (one PostgreSQL and s3rver per run).
        const here: Array<{ origin: Origin; client: CofferHttp }> = [];
        for (const entry of storage === "embedded" ? builds : builds.slice(0, 1)) {
          const build = builds.length > 1 ? buildName(entry) : null;
          const { origin, helpers } = await startOrigin(storage, { workDir, entry, build, envCoffer: opts.envCoffer, timeoutMs: opts.timeoutMs });
          children.push(...helpers, origin.child);
          origins.push(origin);
          const client = new CofferHttp(origin.url, origin.accessKey, opts.concurrency);
          clients.push(client);
          here.push({ origin, client });
        }
        // Each line's builds next to each other, in the tables and in the rounds.
        for (const kind of ["json-first", "json-last", "raw"] as const) {
          if (opts.kinds.includes(kind)) for (const { origin, client } of here) lines.push(cofferLine(kind, origin, client, source, opts.concurrency));
        }
        if (opts.kinds.includes("coffer-tus")) {
          for (const { origin, client } of here) {
            const line = cofferTusLine(origin, client, source, await hasTus(origin.url));
            if (line.skipped) log(`note: "${line.label}" on ${storage}${origin.build ? ` (${origin.build})` : ""} is skipped: ${line.skipped}`);
            lines.push(line);
          }
        }
      }
    }
    if (opts.kinds.includes("dd")) lines.push(ddLine(origins[0]?.dataDir ?? workDir, opts.sizeMiB, opts.timeoutMs));

    const live = lines.filter((l) => !l.skipped);
    const sampler = new RssSampler([...origins.map((o) => o.child), ...(tusChild ? [tusChild] : [])]);
    const oneRound = async (l: Line, what: string): Promise<Timing> => {
      sampler.current = l;
      const timing = await bounded(what, opts.timeoutMs, children, (signal) => l.run(signal));
      sampler.current = null;
      const closed = l.server?.cpuMs() ?? null;
      await bounded(`${what}: cleanup`, opts.timeoutMs, children, (signal) => l.cleanup(signal));
      // What the cleanup set off (emptying the trash) is not counted in the next round on this server.
      const after = await settle(l.server, closed);
      if (after !== null && after > 0) log(`  ${what}: ${after} ms of the server's CPU after the round (untimed: the cleanup and what it set off)`);
      return timing;
    };
    for (let round = 1; round <= opts.warmup; round++) {
      for (const l of live) {
        log(`warm-up ${round}/${opts.warmup}: ${where(l)}`);
        await oneRound(l, `${l.kind} warm-up ${round}`);
      }
    }
    const timings = new Map<Line, Timing[]>(live.map((l) => [l, []]));
    for (let round = 1; round <= opts.rounds; round++) {
      // Each round starts one line further on, so no line always runs right after the same one.
      const order = live.map((_, i) => live[(i + round - 1) % live.length]!);
      for (const l of order) {
        const t = await oneRound(l, `${l.kind} round ${round}`);
        timings.get(l)!.push(t);
        const bytes = l.kind === "dd" ? Math.ceil(opts.sizeMiB) * MiB : opts.bytes;
        log(`round ${round}/${opts.rounds}  ${(bytes / MiB / (t.ms / 1000)).toFixed(1).padStart(7)} MiB/s  ${where(l)}`);
      }
    }
    sampler.stop();

    const results = lines.map((l) => lineResult(l, timings.get(l) ?? [], l.kind === "dd" ? Math.ceil(opts.sizeMiB) * MiB : opts.bytes, kbToMB(sampler.byLine.get(l) ?? null)));
    const memory: MemoryResult[] = origins.map((o) => ({
      storage: o.storage, build: o.build, idleMB: kbToMB(o.idleRssKb), peakMB: peakMB(o.child, sampler.byChild.get(o.child) ?? null), idleTarget: null, peakTarget: null,
    }));
    const summary = summarize(opts, results, memory, tusChild ? peakMB(tusChild, sampler.byChild.get(tusChild) ?? null) : null);
    const table = renderSummary(summary);
    if (opts.json) {
      log(table);
      process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    } else {
      process.stdout.write(`${table}\n`);
    }
    return 0;
  } catch (err) {
    log(`\nBENCHMARK FAILED: ${errorMessage(err)}`);
    for (const child of err instanceof ChildFailure ? err.children : children) log(child.diagnostics());
    return 1;
  } finally {
    for (const c of clients) c.close();
    // The origins first: they hold connections to PostgreSQL and S3.
    await stopAll(origins.map((o) => o.child));
    await stopAll(children.filter((c) => !origins.some((o) => o.child === c)), 10_000);
    await stopPostgres().catch((err: unknown) => log(`warning: stopping PostgreSQL: ${errorMessage(err)}`));
    releaseWatchdog();
  }
}

async function main(): Promise<number> {
  let opts: Options | null;
  try {
    opts = parseOptions(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError) && !(err instanceof TypeError)) throw err;
    log(`${errorMessage(err)}\n\n${USAGE}`);
    return 2;
  }
  if (opts === null) {
    process.stdout.write(USAGE);
    return 0;
  }
  installExitHandlers();
  return run(opts);
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    log(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
