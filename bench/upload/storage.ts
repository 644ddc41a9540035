// Coffer origins for the upload benchmark, one per storage configuration: embedded (SQLite
// and the data directory) and PostgreSQL + S3, for which a throwaway PostgreSQL cluster
// (test/helpers/postgres.ts) and s3rver (test/helpers/s3.ts, in a child process of its own:
// bench/s3rver-server.ts) are started first and stopped at the end.

import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { createDatabaseOn, launchCluster, type ClusterHandle } from "../../test/helpers/postgres.js";
import { Child, REPO_ROOT, log, onExit, sleep, watchDir, watchPid } from "../common.js";
import { treeCpuMs } from "./cpu.js";
import type { Storage } from "./options.js";

/** The credentials s3rver accepts (S3RVER_CREDENTIALS in test/helpers/s3.ts). */
const S3RVER_ENV = { AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER", AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" };

export interface Origin {
  storage: Storage;
  /** The build's name when several run side by side (--compare-entry), else null. */
  build: string | null;
  child: Child;
  url: string;
  accessKey: string;
  dataDir: string;
  /** VmRSS once started and settled, before any upload. */
  idleRssKb: number | null;
  /** CPU ms so far of what the origin stores into (PostgreSQL and s3rver on postgres-s3, nothing embedded). */
  helpersCpuMs: () => number | null;
}

let cluster: ClusterHandle | null = null;
let postmaster: number | null = null;

function postmasterPid(dir: string): number | null {
  try {
    const pid = Number(fs.readFileSync(path.join(dir, "data", "postmaster.pid"), "utf8").split("\n")[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

// From an exit handler: the postmaster is SIGKILLed (its backends follow) and its directory removed.
onExit(() => {
  if (postmaster !== null) {
    try {
      process.kill(postmaster, "SIGKILL");
    } catch {
      // gone
    }
  }
  if (cluster !== null) fs.rmSync(cluster.dir, { recursive: true, force: true, maxRetries: 3 });
});

/** COFFER_DATABASE_URL and COFFER_BLOB_STORE (with s3rver's credentials) of a fresh database and bucket. */
async function startPostgresS3(workDir: string, timeoutMs: number): Promise<{ env: Record<string, string>; s3: Child }> {
  log("postgres-s3: starting a throwaway PostgreSQL cluster and s3rver...");
  cluster = await launchCluster();
  watchDir(cluster.dir);
  const s3Start = Child.start(
    { name: "s3rver", command: process.execPath, args: ["--import", "tsx", path.join(REPO_ROOT, "bench", "s3rver-server.ts")], env: { ...process.env, TMPDIR: workDir } },
    /s3rver listening on \S+ blob-store (\S+)/,
    timeoutMs,
  );
  s3Start.catch(() => {}); // awaited below
  await cluster.ready;
  postmaster = postmasterPid(cluster.dir);
  if (postmaster !== null) watchPid(postmaster);
  const databaseUrl = await createDatabaseOn(cluster.adminUrl);
  const { child: s3, match: blobStore } = await s3Start;
  log(`postgres-s3: PostgreSQL pid ${postmaster ?? "?"}, s3rver pid ${s3.pid}, ${blobStore}`);
  return { env: { COFFER_DATABASE_URL: databaseUrl, COFFER_BLOB_STORE: blobStore, ...S3RVER_ENV }, s3 };
}

/** Stops the cluster and removes its directory (s3rver stops with the other children). */
export async function stopPostgres(): Promise<void> {
  const c = cluster;
  if (c === null) return;
  await c.stop();
  cluster = null;
  if (postmaster !== null) watchPid(postmaster, false);
  postmaster = null;
}

/** Starts an origin on `storage`; the postgres-s3 one also starts what it runs on (returned in `helpers`). */
export async function startOrigin(
  storage: Storage,
  opts: { workDir: string; entry: string; build: string | null; envCoffer: Record<string, string>; timeoutMs: number },
): Promise<{ origin: Origin; helpers: Child[] }> {
  if (!fs.existsSync(opts.entry)) throw new Error(`Coffer entry point ${opts.entry} does not exist; run \`npm run build\` first`);
  const helpers: Child[] = [];
  let helpersCpuMs = (): number | null => 0;
  let storageEnv: Record<string, string> = {};
  if (storage === "postgres-s3") {
    const infra = await startPostgresS3(opts.workDir, opts.timeoutMs);
    helpers.push(infra.s3);
    storageEnv = infra.env;
    const s3 = infra.s3;
    helpersCpuMs = () => {
      const s3Ms = treeCpuMs(s3.pid);
      const pgMs = postmaster === null ? null : treeCpuMs(postmaster);
      return s3Ms === null || pgMs === null ? null : s3Ms + pgMs;
    };
  }
  const dataDir = path.join(opts.workDir, `coffer-${storage}${opts.build === null ? "" : `-${opts.build}`}`);
  fs.mkdirSync(dataDir, { recursive: true });
  const accessKey = randomBytes(24).toString("hex");
  const env: NodeJS.ProcessEnv = {
    ...process.env, COFFER_PORT: "0", COFFER_S3_PORT: "0", COFFER_HOST: "127.0.0.1", COFFER_DATA_DIR: dataDir, COFFER_ACCESS_KEY: accessKey,
    COFFER_SIGNING_SECRET: randomBytes(32).toString("hex"), COFFER_LOG_LEVEL: "warn", ...storageEnv, ...opts.envCoffer,
  };
  const { child, match } = await Child.start(
    { name: `coffer ${storage}${opts.build === null ? "" : ` (${opts.build})`}`, command: process.execPath, args: [opts.entry, "origin"], env },
    /origin listening on (https?:\/\/[^\s"']+)/,
    opts.timeoutMs,
  );
  // Settled: whatever startup allocated and dropped is no longer counted.
  await sleep(1000);
  const idleRssKb = child.statusKb("VmRSS");
  log(`coffer ${storage}${opts.build === null ? "" : ` (${opts.build})`}: pid ${child.pid}, ${match}, idle RSS ${idleRssKb === null ? "?" : ((idleRssKb * 1024) / 1e6).toFixed(1)} MB`);
  return { origin: { storage, build: opts.build, child, url: match, accessKey: env.COFFER_ACCESS_KEY ?? accessKey, dataDir, idleRssKb, helpersCpuMs }, helpers };
}
