// The fleet's processes: one origin, then edges started in batches (parents before the
// edges that fill from them). Every child is listed in `started` for cleanup.

import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { Child, ChildFailure, OriginApi, errorMessage, fmt, log } from "../common.js";
import type { Options } from "./options.js";

export interface Edge {
  index: number;
  child: Child;
  url: string;
  /** The parent edges it fills from (empty: the origin). */
  parents: string[];
}

export interface Fleet {
  origin: Child;
  originUrl: string;
  api: OriginApi;
  edges: Edge[];
  metricsToken: string;
  secret: string;
  edgeToken: string;
  edgesDir: string;
}

/** Children started so far, for cleanup and diagnostics even when startup fails half-way. */
export const started: Child[] = [];

/** Environment without any COFFER_* setting of the caller, so that only ours apply. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("COFFER_")) env[k] = v;
  return env;
}

export async function startOrigin(opts: Options, workDir: string): Promise<Fleet> {
  if (!fs.existsSync(opts.cofferEntry)) throw new Error(`Coffer entry point ${opts.cofferEntry} does not exist; run \`npm run build\` first`);
  const accessKey = randomBytes(24).toString("hex");
  const secret = randomBytes(32).toString("hex");
  const edgeToken = randomBytes(32).toString("hex");
  const metricsToken = randomBytes(24).toString("hex");
  const originDir = path.join(workDir, "origin-data");
  fs.mkdirSync(originDir);
  const { child: origin, match: originUrl } = await Child.start(
    {
      name: "origin",
      command: process.execPath,
      args: [opts.cofferEntry, "origin"],
      env: {
        ...cleanEnv(),
        COFFER_PORT: "0",
        COFFER_S3_PORT: "0",
        COFFER_HOST: "127.0.0.1",
        COFFER_DATA_DIR: originDir,
        COFFER_ACCESS_KEY: accessKey,
        COFFER_SIGNING_SECRET: secret,
        COFFER_EDGE_TOKEN: edgeToken,
        COFFER_METRICS_TOKEN: metricsToken,
        COFFER_CDN_URL: "http://cdn.invalid",
        ...opts.envOrigin,
      },
    },
    /origin listening on (https?:\/\/[^\s"']+)/,
    60_000,
  );
  started.push(origin);
  log(`origin: pid ${origin.pid}, ${originUrl}`);
  const edgesDir = path.join(workDir, "edges");
  fs.mkdirSync(edgesDir);
  const api = new OriginApi(originUrl, opts.envOrigin.COFFER_ACCESS_KEY ?? accessKey, 8);
  return { origin, originUrl, api, edges: [], metricsToken: opts.envOrigin.COFFER_METRICS_TOKEN ?? metricsToken, secret, edgeToken, edgesDir };
}

/** The parents of edge `index` in a fleet with `tiers` parents: none for a parent itself. */
export function parentsOf(fleet: Fleet, index: number, tiers: number): string[] {
  if (tiers === 0 || index < tiers) return [];
  const urls = [fleet.edges[index % tiers]!.url, fleet.edges[(index + 1) % tiers]!.url];
  return tiers === 1 ? urls.slice(0, 1) : urls;
}

async function startEdge(opts: Options, fleet: Fleet, index: number, deadline: number): Promise<Edge> {
  const name = `edge-${String(index + 1).padStart(3, "0")}`;
  const dataDir = path.join(fleet.edgesDir, name);
  fs.mkdirSync(dataDir);
  const parents = parentsOf(fleet, index, opts.tiers);
  const args = [opts.cofferEntry, "edge", "--origin", fleet.originUrl, "--name", name];
  if (parents.length > 0) args.push("--parent", parents.join(","));
  const child = await Child.spawn({
    name,
    command: process.execPath,
    args,
    env: {
      ...cleanEnv(),
      COFFER_EDGE_PORT: "0",
      COFFER_HOST: "127.0.0.1",
      COFFER_DATA_DIR: dataDir,
      COFFER_SIGNING_SECRET: fleet.secret,
      COFFER_EDGE_TOKEN: fleet.edgeToken,
      COFFER_EDGE_CACHE_BYTES: String(opts.cacheBytes),
      ...opts.envEdge,
    },
  });
  started.push(child);
  try {
    const url = await child.waitForLine(/edge listening on (https?:\/\/[^\s"']+)/, Math.max(1000, deadline - performance.now()));
    return { index, child, url, parents };
  } catch (err) {
    throw new ChildFailure(errorMessage(err), [child, fleet.origin]);
  }
}

/** Starts edges `from` to `to - 1`, up to `batch` at once; answers the ms it took. */
export async function startEdges(opts: Options, fleet: Fleet, from: number, to: number): Promise<number> {
  const t0 = performance.now();
  const deadline = t0 + opts.startupTimeoutMs;
  let next = from;
  let failed: unknown = null;
  const worker = async (): Promise<void> => {
    while (failed === null) {
      const i = next++;
      if (i >= to) return;
      try {
        fleet.edges[i] = await startEdge(opts, fleet, i, deadline);
      } catch (err) {
        failed ??= err;
        return;
      }
      const ready = fleet.edges.filter((e) => e !== undefined).length;
      if (ready % 20 === 0 || i === to - 1) log(`edges listening: ${ready}/${opts.edges} (${fmt((performance.now() - t0) / 1000, 1)} s)`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(opts.batch, to - from) }, () => worker()));
  if (failed !== null) throw failed;
  return performance.now() - t0;
}
