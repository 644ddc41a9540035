// The lines of the upload benchmark: what one round of each does, and what it is timed by.
// A round is timed from its first request until the upload is acknowledged (complete-upload's
// answer, tus's last PATCH); the bytes are checked afterwards, untimed.

import { performance } from "node:perf_hooks";
import type { Child } from "../common.js";
import { CpuWindow, type CpuSplit } from "./cpu.js";
import { cofferUpload, fileSha256, type CofferHttp, type PartForm } from "./flows.js";
import type { Kind, Storage } from "./options.js";
import { ddCommand, ddSeconds } from "./physical.js";
import type { Origin } from "./storage.js";
import { emptyDir, sha256File, tusStoredFile, tusUpload } from "./tus.js";

export interface Source {
  data: Buffer;
  sha256: string;
}

export interface Timing extends CpuSplit {
  ms: number;
}

export interface Line {
  kind: Kind;
  storage: Storage | null;
  /** The Coffer build, when several run side by side. */
  build: string | null;
  label: string;
  /** The process that serves it, for its CPU and memory; none for dd. */
  server: Child | null;
  /** Why it does not run, when it does not. */
  skipped: string | null;
  run(signal: AbortSignal): Promise<Timing>;
  cleanup(signal: AbortSignal): Promise<void>;
}

const noHelpers = (): number => 0;

/** Times `fn` (wall, and the CPU of this process, the server, its helpers and the rest); what follows it is untimed. */
async function timed<T>(server: Child | null, helpers: () => number | null, fn: () => Promise<T>): Promise<{ value: T; timing: Timing }> {
  const cpu = new CpuWindow(server, helpers);
  const t0 = performance.now();
  const value = await fn();
  const ms = performance.now() - t0;
  return { value, timing: { ms, ...cpu.split() } };
}

const LABELS: Record<PartForm, string> = {
  "json-first": 'JSON parts, "body" first',
  "json-last": 'JSON parts, "body" last',
  raw: "raw parts",
};

/** A Coffer flow on one origin; the file is deleted after each round. */
export function cofferLine(kind: PartForm, origin: Origin, client: CofferHttp, source: Source, concurrency: number): Line {
  let last: string | null = null;
  return {
    kind, storage: origin.storage, build: origin.build, label: `Coffer ${LABELS[kind]}, ${concurrency} in flight`, server: origin.child, skipped: null,
    async run(signal) {
      const { value, timing } = await timed(origin.child, origin.helpersCpuMs, () => cofferUpload(client, kind, source.data, source.sha256, concurrency, signal));
      last = value;
      return timing;
    },
    async cleanup(signal) {
      if (last !== null) await client.postJson("/collections/file/delete", { file_id: last }, signal);
      last = null;
    },
  };
}

/** Coffer's /tus with tus-js-client in one PATCH, when the origin serves it. */
export function cofferTusLine(origin: Origin, client: CofferHttp, source: Source, available: boolean): Line {
  let last: string | null = null;
  return {
    kind: "coffer-tus", storage: origin.storage, build: origin.build, label: "Coffer /tus, tus-js-client, one PATCH", server: origin.child,
    skipped: available ? null : "the origin does not answer OPTIONS /tus with Tus-Resumable (no tus endpoint in this build)",
    async run(signal) {
      const { value: url, timing } = await timed(origin.child, origin.helpersCpuMs, () => tusUpload(`${origin.url}/tus`, source.data, signal, {
        headers: { Authorization: `Bearer ${origin.accessKey}` }, metadata: { visibility: "Private" },
      }));
      last = new URL(url).pathname.split("/").filter(Boolean).pop() ?? null;
      if (last === null) throw new Error(`no file id in the tus URL ${url}`);
      const got = await fileSha256(client, last, signal);
      if (got !== source.sha256) throw new Error(`SHA-256 MISMATCH: Coffer /tus stored ${got}, the source is ${source.sha256}`);
      return timing;
    },
    async cleanup(signal) {
      if (last !== null) await client.postJson("/collections/file/delete", { file_id: last }, signal);
      last = null;
    },
  };
}

/** The reference: @tus/server with its file store. */
export function tusLine(server: Child, endpoint: string, dataDir: string, source: Source): Line {
  return {
    kind: "tus", storage: null, build: null, label: "@tus/server (file store), tus-js-client, one PATCH", server, skipped: null,
    async run(signal) {
      const { value: url, timing } = await timed(server, noHelpers, () => tusUpload(endpoint, source.data, signal));
      const stored = await sha256File(tusStoredFile(dataDir, url));
      if (stored !== source.sha256) throw new Error(`SHA-256 MISMATCH: @tus/server stored ${stored}, the source is ${source.sha256}`);
      return timing;
    },
    cleanup: () => emptyDir(dataDir),
  };
}

/** The disk's own line: the same bytes written by dd and flushed. */
export function ddLine(dir: string, sizeMiB: number, timeoutMs: number): Line {
  return {
    kind: "dd", storage: null, build: null, label: ddCommand(sizeMiB), server: null, skipped: null,
    async run() {
      const seconds = await ddSeconds(dir, sizeMiB, timeoutMs);
      return { ms: seconds * 1000, clientMs: 0, serverMs: null, helpersMs: null, otherMs: null };
    },
    async cleanup() {},
  };
}
