// S3 bench (contract §12, issue 14): one file (256 MiB by default) up and down through Coffer's
// S3 interface with the aws CLI, and, in the same run against the same origin and edge, through
// Coffer's own paths: raw-part upload (contract §9) and an edge hit. Goals: aws s3 cp up ≥ 0.8×
// raw parts; S3 GetObject ≥ 0.8× an edge hit. GetObject is timed twice: with curl on a presigned
// URL (the server's speed, as the edge hit is timed with curl) and with `aws s3 cp` down (what a
// user sees, the aws CLI's own costs included). Peak RSS of the origin and the edge.
// Then the origin's CPU per GiB for PutObject and UploadPart with each payload form beside raw
// parts (issue 27 point 9, ./s3/cpu.ts).
//
// Run with `npm run bench:s3 -- [--size MiB] [--rounds N] [--cpu-rounds N] [--cpu-only] [--keep] [--entry dist/cli/main.js]`.

import { randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { cpuLines } from "./s3/cpu.js";
import { rawUpload as rawUploadOf, takesRawParts } from "./s3/raw-upload.js";
import {
  Child, DEFAULT_ENTRY, MiB, OriginApi, commandPath, fmt, installExitHandlers, log, makeWorkDir, median, positiveNumber, renderTable,
  runCommand, stopAll, uploadFile,
} from "./common.js";

const { values } = parseArgs({
  options: { size: { type: "string" }, rounds: { type: "string" }, "cpu-rounds": { type: "string" }, "cpu-only": { type: "boolean" }, keep: { type: "boolean" }, entry: { type: "string" } },
});
const SIZE = positiveNumber(values.size, 256, "--size", true) * MiB;
const ROUNDS = values["cpu-only"] ? 0 : positiveNumber(values.rounds, 2, "--rounds", true);
const CPU_ROUNDS = positiveNumber(values["cpu-rounds"], 3, "--cpu-rounds", true);
const PART = 5 * MiB;
const PARALLEL_PARTS = 4;
const COMMAND_TIMEOUT_MS = 10 * 60_000;
const ACCESS_KEY = randomBytes(24).toString("hex");
/** The origin's and edge's entry point: a build other than dist/ (to compare two builds) with --entry. */
const ENTRY = values.entry ? path.resolve(values.entry) : DEFAULT_ENTRY;

function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(COFFER_|AWS_)/.test(k)) env[k] = v;
  return env;
}

/** Writes `size` random bytes to `file`, 8 MiB at a time. */
function writeRandomFile(file: string, size: number): void {
  const fd = fs.openSync(file, "w");
  try {
    for (let left = size; left > 0; left -= 8 * MiB) fs.writeSync(fd, randomBytes(Math.min(8 * MiB, left)));
  } finally {
    fs.closeSync(fd);
  }
}

/** Waits until the edge answers the file from its cache (prewarmed on completion), so the timed GET is a hit. */
async function cachedAtEdge(url: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const cache = await new Promise<string | undefined>((resolve, reject) => {
      http.request(url, { method: "HEAD" }, (res) => {
        res.resume();
        resolve(res.headers["x-cache"] as string | undefined);
      }).on("error", reject).end();
    });
    if (cache === "HIT") return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the edge never had ${url} cached`);
}

/** CPU seconds of this process and of its children that have ended (utime + stime, cutime + cstime). */
function clientCpuSeconds(): number {
  const own = process.cpuUsage();
  // /proc/self/stat: fields 16 and 17 (cutime, cstime), counted after the command name's ")".
  const fields = fs.readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
  const children = (Number(fields[13]) + Number(fields[14])) / 100;
  return (own.user + own.system) / 1e6 + children;
}

/** Where an upload's CPU went: the client (this process or the aws CLI it ran) and the origin, in seconds. */
interface CpuSplit {
  client: number[];
  origin: number[];
}

async function withCpu(split: CpuSplit, origin: { cpuMs(): number | null }, fn: () => Promise<number>): Promise<number> {
  const c0 = clientCpuSeconds();
  const o0 = origin.cpuMs() ?? 0;
  const ms = await fn();
  split.client.push(clientCpuSeconds() - c0);
  split.origin.push(((origin.cpuMs() ?? 0) - o0) / 1000);
  return ms;
}

async function timed(what: string, fn: () => Promise<void>): Promise<number> {
  const t = performance.now();
  await fn();
  const ms = performance.now() - t;
  log(`${what}: ${fmt(SIZE / MiB / (ms / 1000))} MiB/s`);
  return ms;
}

async function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const r = await runCommand(command, args, COMMAND_TIMEOUT_MS, env);
  if (r.code !== 0) throw new Error(`${path.basename(command)} ${args.join(" ")} exited with ${r.code ?? r.signal}: ${r.stderr.slice(-800)}`);
  return r.stdout;
}

async function main(): Promise<void> {
  installExitHandlers();
  const aws = fs.existsSync("/usr/bin/aws") ? "/usr/bin/aws" : commandPath("aws");
  const curl = commandPath("curl");
  if (!aws || !curl) throw new Error("bench:s3 needs the aws CLI (Debian: apt-get install awscli) and curl");
  const work = makeWorkDir(os.tmpdir(), "coffer-bench-s3-", values.keep ?? false);
  const secret = randomBytes(16).toString("hex");
  const edgeToken = randomBytes(16).toString("hex");
  const base = { ...cleanEnv(), COFFER_HOST: "127.0.0.1", COFFER_SIGNING_SECRET: secret, COFFER_EDGE_TOKEN: edgeToken, COFFER_LOG_LEVEL: "warn" };
  const { child: origin, match: originUrl } = await Child.start({
    name: "origin", command: process.execPath, args: [ENTRY, "origin"],
    env: { ...base, COFFER_PORT: "0", COFFER_S3_PORT: "0", COFFER_DATA_DIR: path.join(work, "origin"), COFFER_ACCESS_KEY: ACCESS_KEY, COFFER_CDN_URL: "http://cdn.invalid" },
  }, /origin listening on (http:\/\/\S+)/, 30_000);
  const s3Url = await origin.waitForLine(/s3 listening on (http:\/\/\S+)/, 30_000);
  const { child: edge, match: edgeUrl } = await Child.start({
    name: "edge", command: process.execPath, args: [ENTRY, "edge", "--origin", originUrl],
    env: { ...base, COFFER_EDGE_PORT: "0", COFFER_DATA_DIR: path.join(work, "edge") },
  }, /edge listening on (http:\/\/\S+)/, 30_000);
  const api = new OriginApi(originUrl, ACCESS_KEY, PARALLEL_PARTS);
  try {
    const made = await api.post("/collections/keys/create", { name: "bench-s3", scopes: ["read", "write"] });
    // aws defaults (8 MiB parts, 10 requests at once) but path-style addressing.
    const home = path.join(work, "home");
    fs.mkdirSync(path.join(home, ".aws"), { recursive: true });
    fs.writeFileSync(path.join(home, ".aws", "config"), "[default]\nregion = us-east-1\ns3 =\n    addressing_style = path\n    signature_version = s3v4\n");
    const awsEnv: NodeJS.ProcessEnv = {
      ...cleanEnv(), HOME: home, AWS_CONFIG_FILE: path.join(home, ".aws", "config"), AWS_ACCESS_KEY_ID: String(made.key_id), AWS_SECRET_ACCESS_KEY: String(made.key),
      AWS_EC2_METADATA_DISABLED: "true",
    };
    const awsArgs = (...args: string[]) => ["--endpoint-url", s3Url, ...args];
    // A Public bucket: its files are delivered at the edge without links.
    await run(aws, awsArgs("s3api", "create-bucket", "--bucket", "bench", "--acl", "public-read"), awsEnv);
    const file = path.join(work, "data.bin");
    log(`writing ${SIZE / MiB} MiB of random bytes`);
    writeRandomFile(file, SIZE);

    const t = { raw: [] as number[], awsUp: [] as number[], edge: [] as number[], presigned: [] as number[], awsDown: [] as number[] };
    const rss = { origin: 0, edge: 0 };
    const cpu = { raw: { client: [], origin: [] } as CpuSplit, awsUp: { client: [], origin: [] } as CpuSplit };
    const peak = () => {
      rss.origin = Math.max(rss.origin, origin.statusKb("VmHWM") ?? 0);
      rss.edge = Math.max(rss.edge, edge.statusKb("VmHWM") ?? 0);
    };
    const raw = { api, accessKey: ACCESS_KEY, file: "", size: SIZE, part: PART, parallel: PARALLEL_PARTS };
    const rawUpload = (_api: OriginApi, file: string, name: string) => rawUploadOf({ ...raw, file }, name);
    const own = (await takesRawParts(api, ACCESS_KEY)) ? "raw parts" : "JSON parts";
    if (own === "JSON parts") log("this origin takes no raw parts (contract §9): timing its JSON parts instead");
    for (let round = 1; round <= ROUNDS; round++) {
      log(`round ${round} of ${ROUNDS}`);
      // Uploads alternate which goes first, so a warming machine favours neither.
      const up = [
        async () => {
          t.raw.push(await withCpu(cpu.raw, origin, () => timed(`${own} up`, async () => {
            if (own === "raw parts") await rawUpload(api, file, `raw-${round}.bin`);
            else await uploadFile(api, fs.readFileSync(file), { name: `json-${round}.bin`, visibility: "Public", concurrency: PARALLEL_PARTS });
          })));
        },
        async () => {
          t.awsUp.push(await withCpu(cpu.awsUp, origin, () => timed("aws s3 cp up", async () => { await run(aws, awsArgs("s3", "cp", "--no-progress", file, `s3://bench/up-${round}.bin`), awsEnv); })));
        },
      ];
      for (const step of round % 2 === 1 ? up : up.reverse()) await step();
      peak();
      const listed = await api.post("/collections/list", { limit: 1000 });
      const bucket = (listed.folders as Array<{ folder_id: string; name: string }>).find((f) => f.name === "bench")!;
      const files = (await api.post("/collections/list", { folder_id: bucket.folder_id, limit: 1000 })).files as Array<{ file_id: string; name: string }>;
      const s3File = files.find((f) => f.name === `up-${round}.bin`)!;
      const out = path.join(work, "out.bin");
      await cachedAtEdge(`${edgeUrl}/files/${s3File.file_id}`);
      t.edge.push(await timed("edge hit (curl)", async () => { await run(curl, ["-fsS", "-o", out, `${edgeUrl}/files/${s3File.file_id}`], cleanEnv()); }));
      const presigned = (await run(aws, awsArgs("s3", "presign", `s3://bench/up-${round}.bin`), awsEnv)).trim();
      t.presigned.push(await timed("S3 GetObject (curl, presigned)", async () => { await run(curl, ["-fsS", "-o", out, presigned], cleanEnv()); }));
      t.awsDown.push(await timed("aws s3 cp down", async () => { await run(aws, awsArgs("s3", "cp", "--no-progress", `s3://bench/up-${round}.bin`, out), awsEnv); }));
      if (fs.statSync(out).size !== SIZE) throw new Error("the download is not the file's size");
      peak();
    }

    const s3Cpu = await cpuLines({
      s3Url, keyId: String(made.key_id), secret: String(made.key), bucket: "bench", file, size: SIZE, part: PART, parallel: PARALLEL_PARTS, rounds: CPU_ROUNDS,
      originCpuMs: () => origin.cpuMs(),
      raw: async (round) => {
        if (own !== "raw parts") throw new Error("the CPU lines need an origin that takes raw parts");
        await rawUpload(api, file, `cpu-raw-${round}.bin`);
      },
    });
    process.stdout.write(`\n${SIZE / MiB} MiB, ${CPU_ROUNDS} round(s), origin CPU (all threads, /proc) per GiB uploaded:\n\n${renderTable(s3Cpu.rows).join("\n")}\n\n${s3Cpu.note}\n`);
    if (ROUNDS === 0) return;

    const rate = (xs: number[]) => SIZE / MiB / (median(xs)! / 1000);
    const cpuCell = (c: CpuSplit) => `${fmt(median(c.client)!, 2)} / ${fmt(median(c.origin)!, 2)}`;
    const rows = [
      ["path", "MiB/s (median)", "vs Coffer's own", "goal", "CPU s client / origin"],
      [`upload: Coffer's ${own} (4 × 5 MiB in flight)`, fmt(rate(t.raw)), "1.00x", "", cpuCell(cpu.raw)],
      ["upload: aws s3 cp (8 MiB parts, 10 in flight)", fmt(rate(t.awsUp)), `${fmt(rate(t.awsUp) / rate(t.raw), 2)}x`, rate(t.awsUp) >= 0.8 * rate(t.raw) ? "≥ 0.8x: met" : "≥ 0.8x: NOT met", cpuCell(cpu.awsUp)],
      ["download: edge hit (curl)", fmt(rate(t.edge)), "1.00x", "", ""],
      ["download: S3 GetObject (curl, presigned)", fmt(rate(t.presigned)), `${fmt(rate(t.presigned) / rate(t.edge), 2)}x`, rate(t.presigned) >= 0.8 * rate(t.edge) ? "≥ 0.8x: met" : "≥ 0.8x: NOT met", ""],
      ["download: aws s3 cp", fmt(rate(t.awsDown)), `${fmt(rate(t.awsDown) / rate(t.edge), 2)}x`, "", ""],
    ];
    process.stdout.write(`\n${SIZE / MiB} MiB, ${ROUNDS} round(s), one origin (embedded storage) and one edge on this machine (${os.cpus().length} CPUs):\n\n`);
    process.stdout.write(`${renderTable(rows).join("\n")}\n\npeak RSS: origin ${fmt(rss.origin / 1024)} MiB, edge ${fmt(rss.edge / 1024)} MiB\n`);
  } finally {
    api.close();
    await stopAll([edge, origin]);
  }
}

main().then(() => process.exit(0), (err: unknown) => {
  log(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
