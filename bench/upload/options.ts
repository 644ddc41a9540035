// Command line of bench/upload.ts.

import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { DEFAULT_ENTRY, MiB, UsageError, parseEnvPairs, positiveNumber } from "../common.js";

export type Storage = "embedded" | "postgres-s3";
export const STORAGES: readonly Storage[] = ["embedded", "postgres-s3"];

/** What a line of the table measures. */
export type Kind = "tus" | "json-first" | "json-last" | "raw" | "coffer-tus" | "dd";
export const COFFER_KINDS: readonly Kind[] = ["json-first", "json-last", "raw", "coffer-tus"];

export interface Options {
  sizeMiB: number;
  bytes: number;
  rounds: number;
  warmup: number;
  storage: Storage[];
  /** Lines to run (all by default). */
  kinds: Kind[];
  concurrency: number;
  json: boolean;
  label: string | null;
  envCoffer: Record<string, string>;
  timeoutMs: number;
  cofferEntry: string;
  /** Other builds whose origins run the same Coffer lines in the same rounds (embedded only). */
  compareEntries: string[];
  tmpBase: string;
  keepData: boolean;
}

export const USAGE = `Usage: tsx bench/upload.ts [options]

Side by side in one run: @tus/server (file store) fed by tus-js-client, Coffer's JSON
parts with "body" first and last, raw parts, Coffer's /tus (when the origin has it), and
dd with conv=fdatasync as the disk's own figure; every Coffer line on each --storage.

Options:
  --size MiB            upload size in MiB (default 256)
  --rounds R            timed rounds per line, lines alternating (default 5)
  --warmup W            untimed rounds per line first (default 1)
  --storage LIST        Coffer configurations, comma-separated: embedded, postgres-s3
                        (default both; postgres-s3 starts a throwaway PostgreSQL and s3rver)
  --only LIST           lines to run: tus, json-first, json-last, raw, coffer-tus, dd (default all)
  --concurrency N       parts in flight for Coffer's flows (default 4)
  --label NAME          label for this run (shown in the output)
  --env-coffer K=V      extra environment for every Coffer origin (repeatable)
  --timeout SECONDS     limit per round (default 120)
  --coffer-entry PATH   Coffer CLI entry point (default dist/cli/main.js)
  --compare-entry PATH  another build's CLI entry point (repeatable): its embedded origin runs the
                        same Coffer lines in the same rounds, named by the directory holding its dist/
  --tmp-dir DIR         where data directories go: the disk under test (default OS tmp)
  --keep-data           keep the data directories
  --json                JSON summary on stdout (the table goes to stderr)
  -h, --help            show this help
`;

const ALL_KINDS: readonly Kind[] = ["tus", "json-first", "json-last", "raw", "coffer-tus", "dd"];

function list<T extends string>(value: string | undefined, all: readonly T[], option: string): T[] {
  if (value === undefined) return [...all];
  const out: T[] = [];
  for (const item of value.split(",").map((x) => x.trim()).filter(Boolean)) {
    if (!(all as readonly string[]).includes(item)) throw new UsageError(`${option} takes ${all.join(", ")}; got ${JSON.stringify(item)}`);
    if (!out.includes(item as T)) out.push(item as T);
  }
  if (out.length === 0) throw new UsageError(`${option} needs at least one value`);
  return out;
}

/** The options, or null for --help. */
export function parseOptions(argv: string[]): Options | null {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      size: { type: "string" },
      rounds: { type: "string" },
      warmup: { type: "string" },
      storage: { type: "string" },
      only: { type: "string" },
      concurrency: { type: "string" },
      json: { type: "boolean" },
      label: { type: "string" },
      "env-coffer": { type: "string", multiple: true },
      timeout: { type: "string" },
      "coffer-entry": { type: "string" },
      "compare-entry": { type: "string", multiple: true },
      "tmp-dir": { type: "string" },
      "keep-data": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) return null;
  const sizeMiB = positiveNumber(values.size, 256, "--size");
  const bytes = Math.round(sizeMiB * MiB);
  if (bytes > 2 ** 31 - 1) throw new UsageError("--size is too large for one in-memory Buffer");
  const warmup = values.warmup === undefined ? 1 : Number(values.warmup);
  if (!Number.isInteger(warmup) || warmup < 0) throw new UsageError("--warmup must be a whole number");
  return {
    sizeMiB,
    bytes,
    rounds: positiveNumber(values.rounds, 5, "--rounds", true),
    warmup,
    storage: list(values.storage, STORAGES, "--storage"),
    kinds: list(values.only, ALL_KINDS, "--only"),
    concurrency: positiveNumber(values.concurrency, 4, "--concurrency", true),
    json: values.json ?? false,
    label: values.label ?? null,
    envCoffer: parseEnvPairs(values["env-coffer"], "--env-coffer"),
    timeoutMs: positiveNumber(values.timeout, 120, "--timeout") * 1000,
    cofferEntry: path.resolve(values["coffer-entry"] ?? DEFAULT_ENTRY),
    compareEntries: (values["compare-entry"] ?? []).map((e) => path.resolve(e)),
    tmpBase: path.resolve(values["tmp-dir"] ?? os.tmpdir()),
    keepData: values["keep-data"] ?? false,
  };
}

/** A build's name in the tables: the directory holding its dist/ (/tmp/base/dist/cli/main.js is "base"). */
export const buildName = (entry: string): string => path.basename(path.resolve(path.dirname(entry), "..", ".."));
