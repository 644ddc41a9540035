// The load test's workload and its checks: one origin and N edges as processes, many
// concurrent uploads of mixed sizes (through the SDK's uploadFile, parts streamed from
// disk), downloaders at every edge (plain URLs and signed links), and clients switching
// visibility and deleting. Every answer is logged with its start and end time and judged
// against what the switchers' acknowledged calls allow (load-rules.ts); at the end every
// stored SHA-256 and the bytes behind it are checked. bench/load.ts is the command;
// test/security/load.test.ts runs it small.

import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { CofferClient, Limiter, signLink, type FileRecord } from "../src/sdk/index.js";
import { Child, makeWorkDir, percentile, sleep, stopAll, type SpawnSpec } from "./common.js";
import { judge, type Delivery, type FileHistory, type Vis } from "./load-rules.js";

export interface LoadOptions {
  uploads: number;
  minSize: number;
  maxSize: number;
  downloaders: number;
  switchers: number;
  /** The mixed phase lasts at least this long, and until every upload has finished. */
  seconds: number;
  edges: number;
  /** Parts in flight across all uploads. */
  partsInFlight: number;
  entry: string;
  tmpDir: string;
  keepData: boolean;
  log: (line: string) => void;
  seed: number;
}

export interface EndpointStats {
  endpoint: string;
  count: number;
  failed: number;
  p50Ms: number | null;
  p99Ms: number | null;
}

export interface LoadReport {
  options: Omit<LoadOptions, "log">;
  durationS: number;
  uploadedBytes: number;
  uploadMiBps: number;
  downloadedBytes: number;
  downloadMiBps: number;
  deliveries: number;
  deliveriesPerS: number;
  switches: number;
  deletes: number;
  endpoints: EndpointStats[];
  /** Operations that failed after the SDK's retries, network errors, 503s, broken bodies. */
  errors: string[];
  errorCount: number;
  /** Answers the rules forbid, and stored data that does not match what was uploaded. */
  violations: string[];
  violationCount: number;
  /** Peak resident memory per process, in MB (10^6 bytes). */
  peakRssMb: Record<string, number | null>;
  answers: Record<string, number>;
}

const MiB = 1024 * 1024;
const LIST_LIMIT = 50;

/** A small deterministic generator, so a run's sizes can be repeated with --seed. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Sizes spread evenly on a log scale from min to max, both ends included. */
export function planSizes(n: number, min: number, max: number, random: () => number): number[] {
  const sizes = Array.from({ length: n }, () => Math.round(Math.exp(Math.log(min) + random() * (Math.log(max) - Math.log(min)))));
  if (n > 0) sizes[0] = max;
  if (n > 1) sizes[1] = min;
  return sizes;
}

/** Writes `size` random bytes to `file` in 1 MiB pieces; answers their SHA-256. */
function writeSource(file: string, size: number): string {
  const hash = createHash("sha256");
  const fd = fs.openSync(file, "w", 0o600);
  try {
    for (let left = size; left > 0; ) {
      const piece = randomBytes(Math.min(MiB, left));
      hash.update(piece);
      fs.writeSync(fd, piece);
      left -= piece.length;
    }
  } finally {
    fs.closeSync(fd);
  }
  return hash.digest("hex");
}

class Recorder {
  readonly latencies = new Map<string, number[]>();
  readonly failures = new Map<string, number>();
  readonly errors: string[] = [];
  errorCount = 0;
  readonly violations: string[] = [];
  violationCount = 0;
  time(endpoint: string, ms: number, ok: boolean): void {
    let list = this.latencies.get(endpoint);
    if (!list) this.latencies.set(endpoint, (list = []));
    list.push(ms);
    if (!ok) this.failures.set(endpoint, (this.failures.get(endpoint) ?? 0) + 1);
  }
  error(message: string): void {
    this.errorCount++;
    if (this.errors.length < LIST_LIMIT) this.errors.push(message);
  }
  violation(message: string): void {
    this.violationCount++;
    if (this.violations.length < LIST_LIMIT) this.violations.push(message);
  }
}

interface Fleet {
  origin: Child;
  originUrl: string;
  edges: Array<{ child: Child; url: string }>;
  key: string;
  secret: string;
}

/** Starts the processes; each is added to `children` as soon as it runs, so a failed start still stops them all. */
async function startFleet(opts: LoadOptions, work: string, children: Child[]): Promise<Fleet> {
  if (!fs.existsSync(opts.entry)) throw new Error(`Coffer entry point ${opts.entry} does not exist; run \`npm run build\` first`);
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("COFFER_")) env[k] = v;
  const key = randomBytes(24).toString("hex");
  const secret = randomBytes(32).toString("hex");
  const edgeToken = randomBytes(32).toString("hex");
  const shared = { COFFER_HOST: "127.0.0.1", COFFER_SIGNING_SECRET: secret, COFFER_EDGE_TOKEN: edgeToken, COFFER_LOG_LEVEL: "warn", COFFER_RATE_LIMIT: "1000000" };
  const spec = (name: string, args: string[], extra: Record<string, string>): SpawnSpec => ({
    name, command: process.execPath, args: [opts.entry, ...args], env: { ...env, ...shared, ...extra },
  });
  const origin = await Child.spawn(spec("origin", ["origin"], { COFFER_PORT: "0", COFFER_S3_PORT: "0", COFFER_DATA_DIR: path.join(work, "origin"), COFFER_ACCESS_KEY: key, COFFER_CDN_URL: "http://cdn.invalid" }));
  children.push(origin);
  const originUrl = await origin.waitForLine(/origin listening on (http:\/\/\S+)/, 60_000);
  const edges = await Promise.all(Array.from({ length: opts.edges }, async (_, i) => {
    const child = await Child.spawn(spec(`edge ${i + 1}`, ["edge", "--origin", originUrl], { COFFER_EDGE_PORT: "0", COFFER_DATA_DIR: path.join(work, `edge-${i + 1}`) }));
    children.push(child);
    return { child, url: await child.waitForLine(/edge listening on (http:\/\/\S+)/, 60_000) };
  }));
  return { origin, originUrl, edges, key, secret };
}

interface Known extends FileHistory {
  path: string;
  signedPath: string;
  deleted: boolean;
}

/** One GET at an edge, the body hashed as it arrives. */
function deliver(agent: http.Agent, edgeUrl: string, pathQuery: string): Promise<Omit<Delivery, "fileId" | "edge" | "signed" | "start" | "end">> {
  return new Promise((resolve) => {
    const req = http.get(`${edgeUrl}${pathQuery}`, { agent, timeout: 120_000 }, (res) => {
      const hash = createHash("sha256");
      let bytes = 0;
      const status = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => {
        bytes += c.length;
        if (status === 200) hash.update(c);
        else if (chunks.length < 8) chunks.push(c);
      });
      res.on("end", () => {
        let errorCode: string | null = null;
        if (status !== 200) {
          try {
            errorCode = (JSON.parse(Buffer.concat(chunks).toString("utf8")) as { error: { code: string } }).error.code;
          } catch {
            // not a Coffer error body
          }
        }
        resolve({ status, errorCode, bytes, sha256: status === 200 ? hash.digest("hex") : null, broken: false });
      });
      res.on("error", () => resolve({ status, errorCode: null, bytes, sha256: null, broken: true }));
      res.on("aborted", () => resolve({ status, errorCode: null, bytes, sha256: null, broken: true }));
    });
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", () => resolve({ status: 0, errorCode: null, bytes: 0, sha256: null, broken: false }));
  });
}

/** Runs the whole load test; children are stopped and the work directory removed before it returns. */
export async function runLoad(opts: LoadOptions): Promise<LoadReport> {
  const work = makeWorkDir(opts.tmpDir, "coffer-load-", opts.keepData);
  const rec = new Recorder();
  const random = mulberry32(opts.seed);
  const children: Child[] = [];
  const peak = new Map<string, number>();
  let sampler: NodeJS.Timeout | undefined;
  try {
    const fleet = await startFleet(opts, work, children);
    const sample = () => {
      for (const c of children) {
        const kb = Math.max(c.statusKb("VmRSS") ?? 0, c.statusKb("VmHWM") ?? 0);
        peak.set(c.name, Math.max(peak.get(c.name) ?? 0, kb));
      }
    };
    sampler = setInterval(sample, 200);

    // The sources, on disk: the SDK reads each part from its Blob when it sends it.
    const sizes = planSizes(opts.uploads, opts.minSize, opts.maxSize, random);
    fs.mkdirSync(path.join(work, "src"));
    const sources = sizes.map((size, i) => {
      const file = path.join(work, "src", `${i}.bin`);
      return { i, size, file, sha256: writeSource(file, size), visibility: (random() < 0.5 ? "Public" : "Private") as Vis };
    });
    opts.log(`sources: ${sources.length} files, ${(sizes.reduce((a, b) => a + b, 0) / MiB).toFixed(1)} MiB, ${fleet.edges.length} edges`);

    let timing = true;
    const timedFetch: typeof fetch = async (input, init) => {
      if (!timing) return fetch(input, init);
      const endpoint = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url).pathname;
      const t0 = performance.now();
      try {
        const res = await fetch(input, init);
        rec.time(endpoint, performance.now() - t0, res.ok);
        return res;
      } catch (err) {
        rec.time(endpoint, performance.now() - t0, false);
        throw err;
      }
    };
    const client = new CofferClient({ url: fleet.originUrl, accessKey: fleet.key, fetch: timedFetch });
    const known: Known[] = [];
    const limiter = new Limiter(opts.partsInFlight);
    const t0 = performance.now();
    let uploadsDone = false;
    let uploadedBytes = 0;

    const uploads = Promise.all(sources.map(async (s) => {
      try {
        const blob = await fs.openAsBlob(s.file);
        const record: FileRecord = await client.uploadFile(blob, { name: `load-${s.i}.bin`, visibility: s.visibility, limiter, concurrency: 4 });
        const completedAt = performance.now();
        uploadedBytes += s.size;
        if (record.sha256 !== s.sha256 || record.size !== s.size) rec.violation(`upload ${s.i}: stored ${record.size} bytes with SHA-256 ${record.sha256}, uploaded ${s.size} with ${s.sha256}`);
        const p = `/files/${record.file_id}`;
        known.push({
          fileId: record.file_id, size: s.size, sha256: s.sha256, initial: s.visibility, completedAt, changes: [], unknownFrom: null,
          path: p, signedPath: await signLink(p, { secret: fleet.secret, expiresIn: 3600 }), deleted: false,
        });
      } catch (err) {
        rec.error(`upload ${s.i} (${s.size} bytes): ${(err as Error).message}`);
      }
    })).finally(() => {
      uploadsDone = true;
    });
    const running = () => !uploadsDone || performance.now() - t0 < opts.seconds * 1000;

    const deliveries: Delivery[] = [];
    const agents = fleet.edges.map(() => new http.Agent({ keepAlive: true, maxSockets: opts.downloaders }));
    let downloadedBytes = 0;
    const downloader = async () => {
      while (running()) {
        if (known.length === 0) {
          await sleep(20);
          continue;
        }
        const f = known[Math.floor(Math.random() * known.length)]!;
        const edge = Math.floor(Math.random() * fleet.edges.length);
        const signed = Math.random() < 0.5;
        const start = performance.now();
        const r = await deliver(agents[edge]!, fleet.edges[edge]!.url, signed ? f.signedPath : f.path);
        const end = performance.now();
        rec.time(signed ? "GET /files (signed link)" : "GET /files (plain)", end - start, r.status !== 0 && r.status < 500 && !r.broken);
        downloadedBytes += r.bytes;
        deliveries.push({ ...r, fileId: f.fileId, edge, signed, start, end });
      }
    };

    let switches = 0;
    let deletes = 0;
    const switcher = async (k: number) => {
      while (running()) {
        const mine = known.filter((f, i) => i % opts.switchers === k && !f.deleted && f.unknownFrom === null);
        if (mine.length === 0) {
          await sleep(50);
          continue;
        }
        const f = mine[Math.floor(Math.random() * mine.length)]!;
        // Deletes are rarer, and stop at a quarter of the files, so most stay to be downloaded.
        const del = Math.random() < 0.1 && deletes < opts.uploads / 4;
        const sent = performance.now();
        try {
          if (del) {
            await client.deleteFile(f.fileId);
            f.changes.push({ kind: "delete", sent, answered: performance.now() });
            f.deleted = true;
            deletes++;
          } else {
            const last = [...f.changes].reverse().find((c) => c.kind === "visibility")?.value ?? f.initial;
            const value: Vis = last === "Public" ? "Private" : "Public";
            await client.updateFile({ file_id: f.fileId, visibility: value });
            f.changes.push({ kind: "visibility", value, sent, answered: performance.now() });
            switches++;
          }
        } catch (err) {
          f.unknownFrom = sent;
          rec.error(`${del ? "delete" : "visibility"} ${f.fileId}: ${(err as Error).message}`);
        }
        await sleep(20 + Math.random() * 80);
      }
    };

    await Promise.all([uploads, ...Array.from({ length: opts.downloaders }, downloader), ...Array.from({ length: opts.switchers }, (_, k) => switcher(k))]);
    const durationS = (performance.now() - t0) / 1000;
    for (const a of agents) a.destroy();
    opts.log(`workload done in ${durationS.toFixed(1)} s: ${known.length} uploads, ${deliveries.length} deliveries, ${switches} switches, ${deletes} deletes`);

    // Every answer against the rules.
    const byId = new Map(known.map((f) => [f.fileId, f]));
    const answers: Record<string, number> = {};
    for (const d of deliveries) {
      const label = `${d.signed ? "signed" : "plain"} ${d.status}${d.errorCode ? ` ${d.errorCode}` : ""}${d.broken ? " broken" : ""}`;
      answers[label] = (answers[label] ?? 0) + 1;
      const verdict = judge(byId.get(d.fileId)!, d);
      const at = `${d.signed ? "signed" : "plain"} GET ${d.fileId} at edge ${d.edge + 1} [${(d.start - t0).toFixed(0)}–${(d.end - t0).toFixed(0)} ms]`;
      if (verdict === null) rec.error(`${at}: ${d.status === 0 ? "no answer" : d.broken ? "body cut off" : `${d.status} ${d.errorCode ?? ""}`}`);
      else if (!verdict.ok) rec.violation(`${at}: ${verdict.rule}`);
    }

    // Every stored record and the bytes behind it, read back through an edge with a fresh link
    // (not counted in the workload's figures).
    timing = false;
    const checkAgent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    let next = 0;
    await Promise.all(Array.from({ length: 4 }, async () => {
      while (next < known.length) {
        const f = known[next++]!;
        if (f.unknownFrom !== null) continue;
        try {
          const stored = await client.getFile(f.fileId).then((r) => r, (err: { status?: number }) => (err.status === 404 ? null : Promise.reject(err)));
          if (f.deleted) {
            if (stored !== null) rec.violation(`${f.fileId}: still stored after its delete was answered`);
            continue;
          }
          if (stored === null) {
            rec.violation(`${f.fileId}: gone, though never deleted`);
            continue;
          }
          if (stored.sha256 !== f.sha256 || stored.size !== f.size) rec.violation(`${f.fileId}: stored SHA-256 ${stored.sha256} (${stored.size} bytes), uploaded ${f.sha256} (${f.size})`);
          const edge = fleet.edges[next % fleet.edges.length]!;
          const r = await deliver(checkAgent, edge.url, await signLink(f.path, { secret: fleet.secret, expiresIn: 600 }));
          if (r.status !== 200 || r.sha256 !== f.sha256) rec.violation(`${f.fileId}: the bytes read back answer ${r.status} with SHA-256 ${r.sha256}, uploaded ${f.sha256}`);
        } catch (err) {
          rec.error(`checking ${f.fileId}: ${(err as Error).message}`);
        }
      }
    }));
    checkAgent.destroy();
    sample();

    const endpoints = [...rec.latencies.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([endpoint, ms]) => ({
      endpoint, count: ms.length, failed: rec.failures.get(endpoint) ?? 0, p50Ms: percentile(ms, 50), p99Ms: percentile(ms, 99),
    }));
    const { log: _log, ...options } = opts;
    return {
      options, durationS, uploadedBytes, uploadMiBps: uploadedBytes / MiB / durationS, downloadedBytes, downloadMiBps: downloadedBytes / MiB / durationS,
      deliveries: deliveries.length, deliveriesPerS: deliveries.length / durationS, switches, deletes, endpoints,
      errors: rec.errors, errorCount: rec.errorCount, violations: rec.violations, violationCount: rec.violationCount,
      peakRssMb: Object.fromEntries(children.map((c) => [c.name, peak.has(c.name) ? (peak.get(c.name)! * 1024) / 1e6 : null])), answers,
    };
  } finally {
    clearInterval(sampler);
    await stopAll(children);
    if (!opts.keepData) fs.rmSync(work, { recursive: true, force: true });
  }
}
