// Coffer's /tus (contract §9) fed by tus-js-client with the settings the @tus/server contestant
// uses (one PATCH of the whole file, no retries), and `dd conv=fdatasync` as the physical line:
// what the disk under the servers' data directories takes when every byte must reach it.
//
// Used by bench/upload.ts; kept apart so the upload bench's other flows can move without it.

import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { Upload } from "tus-js-client";

export const COFFER_TUS_LABEL = "Coffer /tus with tus-js-client, one PATCH";
/** Issue 11: Coffer's /tus must keep up with @tus/server fed by the same client (while Coffer fsyncs and tus does not). */
export const COFFER_TUS_TARGET_RATIO = 1.0;

export interface Meter {
  start(): void;
  stop(): void;
}

export interface TusSource {
  data: Buffer;
  sha256: string;
}

/** What an origin needs to be asked: its base URL (ending in /) and the Authorization header. */
export interface CofferAddress {
  base: string;
  authorization: string;
}

async function callJson(at: CofferAddress, pathname: string, body: unknown, signal?: AbortSignal): Promise<Record<string, unknown>> {
  const res = await fetch(new URL(pathname.replace(/^\//, ""), at.base), {
    method: "POST",
    headers: { authorization: at.authorization, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`POST ${pathname} -> HTTP ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/**
 * One upload to {base}/tus: meter.start() before the creation POST, meter.stop() when the
 * PATCH is answered (by then the file is ready: the answer names it in Coffer-File-Id).
 * Then, untimed, the file's SHA-256 is checked. Returns the file id.
 */
export async function cofferTusUpload(at: CofferAddress, source: TusSource, signal: AbortSignal, meter: Meter): Promise<string> {
  meter.start();
  const fileId = await new Promise<string>((resolve, reject) => {
    const upload = new Upload(source.data, {
      endpoint: new URL("tus", at.base).href,
      headers: { Authorization: at.authorization },
      retryDelays: null, // a failure must fail the round, not be papered over
      metadata: { filename: "bench.bin", filetype: "application/octet-stream" },
      onSuccess: ({ lastResponse }) => {
        const id = lastResponse.getHeader("Coffer-File-Id");
        if (!id) reject(new Error("the last PATCH was answered without Coffer-File-Id"));
        else resolve(id);
      },
      onError: (err) => reject(err),
    });
    signal.addEventListener(
      "abort",
      () => {
        void upload.abort().catch(() => {});
        reject(signal.reason);
      },
      { once: true },
    );
    upload.start();
  });
  meter.stop();
  const file = await callJson(at, "/collections/file/get", { file_id: fileId }, signal);
  if (file.status !== "ready" || file.sha256 !== source.sha256) {
    throw new Error(`SHA-256 MISMATCH: coffer /tus made ${JSON.stringify({ status: file.status, sha256: file.sha256 })}, source is ${source.sha256}`);
  }
  return fileId;
}

/** A contestant of bench/upload.ts: the /tus flow on an origin another contestant started. */
export class CofferTusRunner<Name extends string, Child extends { alive: boolean }> {
  private lastFileId: string | null = null;

  constructor(
    readonly name: Name,
    readonly child: Child,
    private readonly at: CofferAddress,
    private readonly source: TusSource,
  ) {}

  async run(signal: AbortSignal, meter: Meter): Promise<void> {
    this.lastFileId = await cofferTusUpload(this.at, this.source, signal, meter);
  }

  async cleanup(): Promise<void> {
    const fileId = this.lastFileId;
    this.lastFileId = null;
    if (fileId === null || !this.child.alive) return;
    await callJson(this.at, "/collections/file/delete", { file_id: fileId }, AbortSignal.timeout(30_000)).catch(() => {});
  }

  close(): void {}
}

/**
 * `dd if=/dev/zero of=<dir>/dd.bin bs=1M count=<mib> conv=fdatasync`: MiB/s from the time
 * dd reports (it includes the final fdatasync). The file is removed after.
 */
export async function ddFdatasync(dir: string, mib: number, timeoutMs: number): Promise<number> {
  const file = path.join(dir, "dd.bin");
  const count = Math.max(1, Math.round(mib));
  const t0 = performance.now();
  const stderr = await new Promise<string>((resolve, reject) => {
    const dd = spawn("dd", ["if=/dev/zero", `of=${file}`, "bs=1M", `count=${count}`, "conv=fdatasync"], {
      env: { ...process.env, LC_ALL: "C" },
      stdio: ["ignore", "ignore", "pipe"],
      timeout: timeoutMs,
    });
    let text = "";
    dd.stderr.setEncoding("utf8").on("data", (c: string) => (text += c));
    dd.on("error", reject);
    dd.on("close", (code) => (code === 0 ? resolve(text) : reject(new Error(`dd exited with ${code}: ${text.trim()}`))));
  });
  const wallS = (performance.now() - t0) / 1000;
  await fs.promises.rm(file, { force: true });
  const reported = /copied, ([\d.]+) s/.exec(stderr);
  const seconds = reported ? Number(reported[1]) : wallS;
  return count / seconds;
}

const fmt = (x: number | null, digits = 1): string => (x === null ? "n/a" : x.toFixed(digits));

/**
 * The lines bench/upload.ts prints: each Coffer /tus configuration against @tus/server fed by
 * the same client, and against the physical line.
 */
export function cofferTusLines(
  configurations: Array<{ storage: string; mibps: number | null }>,
  tusMiBps: number | null,
  ddMiBps: number | null,
  seedEmbeddedMiBps: number | null,
): string[] {
  const ratio = (a: number | null, b: number | null): number | null => (a === null || b === null || b <= 0 ? null : a / b);
  const lines: string[] = [];
  for (const c of configurations) {
    const r = ratio(c.mibps, tusMiBps);
    const verdict = c.storage !== "embedded" ? "(no target: s3rver is a functional stand-in)" : r === null ? "SKIP" : r >= COFFER_TUS_TARGET_RATIO ? "PASS" : "FAIL";
    lines.push(
      `${COFFER_TUS_LABEL} (${c.storage}): ${fmt(c.mibps)} MiB/s vs @tus/server with the same client ${fmt(tusMiBps)} MiB/s = ` +
        `${fmt(r, 2)}x  target >= ${COFFER_TUS_TARGET_RATIO.toFixed(2)} ${verdict}`,
    );
  }
  lines.push("  (Coffer answers the PATCH once every part is fsynced and the file is ready with its SHA-256; @tus/server does not fsync)");
  const embedded = configurations.find((c) => c.storage === "embedded")?.mibps ?? null;
  lines.push(
    `physical line: dd conv=fdatasync ${fmt(ddMiBps)} MiB/s (same disk, same run); ` +
      `Coffer /tus embedded at ${fmt(ratio(embedded, ddMiBps), 2)}x of it, seed flow at ${fmt(ratio(seedEmbeddedMiBps, ddMiBps), 2)}x, ` +
      `@tus/server at ${fmt(ratio(tusMiBps, ddMiBps), 2)}x`,
  );
  return lines;
}
