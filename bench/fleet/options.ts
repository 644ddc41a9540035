// The fleet benchmark's command line.

import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { DEFAULT_ENTRY, MiB, parseEnvPairs, positiveNumber } from "../common.js";

export interface Options {
  edges: number;
  /** Parent edges (fill from the origin); the others fill from two of them. 0: no tiers. */
  tiers: number;
  batch: number;
  rounds: number;
  prewarmBytes: number;
  count: number;
  verify: number;
  floorRounds: number;
  cacheBytes: number;
  pollMs: number;
  /** Seconds the fleet idles after its last edge started, before anything at full size is measured. */
  settleS: number;
  phaseTimeoutMs: number;
  startupTimeoutMs: number;
  maxTimeS: number;
  json: boolean;
  label: string | null;
  cofferEntry: string;
  tmpBase: string;
  keepData: boolean;
  envOrigin: Record<string, string>;
  envEdge: Record<string, string>;
}

export const USAGE = `Usage: tsx bench/fleet.ts [options]

Runs one Coffer origin and N edges (optionally P of them parents the others fill from) and
measures, in one run: prewarm, complete-upload at 1 edge and at N, delete and visibility-switch
latency, the origin's bytes and CPU per change, the machine's floor and copy rate, and each
edge's idle memory. See bench/README.md ("Fleet").

Options:
  --edges N               edge processes (default 50)
  --tiers P               P parent edges filling from the origin; every other edge is started
                          with --parent <parent i mod P>,<parent (i+1) mod P> (default 0: none)
  --batch B               edges starting at once (default 10)
  --rounds R              prewarm rounds, at 1 edge and then at N (default 3)
  --prewarm-mib M         size of the prewarm file in MiB (default 10)
  --count K               files deleted, and visibility switches each way (default 20)
  --verify V              random edges checked after each delete or switch (default 3)
  --floor-rounds F        rounds of the floor (every edge answers GET /healthz) (default 10)
  --cache-mib M           COFFER_EDGE_CACHE_BYTES of each edge, in MiB (default 64)
  --poll-ms MS            interval between HEADs to one edge while waiting for HIT (default 50)
  --settle S              seconds the fleet idles after its last edge started, before anything at
                          full size is measured: a fleet just started spends more on its background
                          for about a minute (default 0: at once)
  --phase-timeout S       limit for one prewarm round or one wait for the edges (default 30)
  --startup-timeout S     limit for all edges to report listening (default 300)
  --max-time SECONDS      limit for the whole run (default 1800)
  --label NAME            label for this configuration (shown in the output)
  --env-origin K=V        extra environment for the origin (repeatable)
  --env-edge K=V          extra environment for every edge (repeatable)
  --coffer-entry PATH     Coffer CLI entry point (default dist/cli/main.js)
  --tmp-dir DIR           where the work directory is created (default OS tmp)
  --keep-data             do not delete the work directory at the end
  --json                  print a JSON summary on stdout (the table goes to stderr)
  -h, --help              show this help
`;

export function parseOptions(argv: string[]): Options | null {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      edges: { type: "string" },
      tiers: { type: "string" },
      batch: { type: "string" },
      rounds: { type: "string" },
      "prewarm-mib": { type: "string" },
      count: { type: "string" },
      verify: { type: "string" },
      "floor-rounds": { type: "string" },
      "cache-mib": { type: "string" },
      "poll-ms": { type: "string" },
      settle: { type: "string" },
      "phase-timeout": { type: "string" },
      "startup-timeout": { type: "string" },
      "max-time": { type: "string" },
      label: { type: "string" },
      "env-origin": { type: "string", multiple: true },
      "env-edge": { type: "string", multiple: true },
      "coffer-entry": { type: "string" },
      "tmp-dir": { type: "string" },
      "keep-data": { type: "boolean" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) return null;
  const edges = positiveNumber(values.edges, 50, "--edges", true);
  const tiers = values.tiers === undefined || values.tiers === "0" ? 0 : positiveNumber(values.tiers, 0, "--tiers", true);
  if (tiers > 0 && tiers >= edges) throw new Error(`--tiers ${tiers} must be smaller than --edges ${edges}`);
  return {
    edges,
    tiers,
    batch: positiveNumber(values.batch, 10, "--batch", true),
    rounds: positiveNumber(values.rounds, 3, "--rounds", true),
    prewarmBytes: Math.round(positiveNumber(values["prewarm-mib"], 10, "--prewarm-mib") * MiB),
    count: positiveNumber(values.count, 20, "--count", true),
    verify: positiveNumber(values.verify, 3, "--verify", true),
    floorRounds: positiveNumber(values["floor-rounds"], 10, "--floor-rounds", true),
    cacheBytes: Math.round(positiveNumber(values["cache-mib"], 64, "--cache-mib") * MiB),
    pollMs: positiveNumber(values["poll-ms"], 50, "--poll-ms"),
    settleS: values.settle === undefined || values.settle === "0" ? 0 : positiveNumber(values.settle, 0, "--settle"),
    phaseTimeoutMs: positiveNumber(values["phase-timeout"], 30, "--phase-timeout") * 1000,
    startupTimeoutMs: positiveNumber(values["startup-timeout"], 300, "--startup-timeout") * 1000,
    maxTimeS: positiveNumber(values["max-time"], 1800, "--max-time"),
    json: values.json ?? false,
    label: values.label ?? null,
    cofferEntry: path.resolve(values["coffer-entry"] ?? DEFAULT_ENTRY),
    tmpBase: path.resolve(values["tmp-dir"] ?? os.tmpdir()),
    keepData: values["keep-data"] ?? false,
    envOrigin: parseEnvPairs(values["env-origin"], "--env-origin"),
    envEdge: parseEnvPairs(values["env-edge"], "--env-edge"),
  };
}
