// What this machine can do, measured in the same run as the fleet: how fast it copies bytes
// between local processes over a socket with every core busy, and how much memory an idle
// process uses (each edge, and a bare Node http server for contrast).

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Child, REPO_ROOT, median } from "../common.js";
import { cleanEnv, started } from "./procs.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));

export interface CopyRate {
  receivers: number;
  bytes: number;
  /** Bytes per second, all receivers together: bare socket bytes. */
  bytesPerS: number;
  /**
   * The same, each receiver doing what a verified fill must at least do with the bytes (SHA-256,
   * 1 MiB writes to a new file in its own directory, fsync): the floor a prewarm is held to.
   */
  fillBytesPerS: number;
}

/**
 * One sender process (as the origin or a parent is) and one receiver per core, each reading
 * `size` bytes `rounds` times over its own connection at the same time: the aggregate rate,
 * once for bare bytes and once as fills into files under `dir`.
 */
export async function measureCopyRate(size: number, rounds: number, dir: string): Promise<CopyRate> {
  const script = path.join(HERE, "copy-peer.mjs");
  const { child: sender, match: port } = await Child.start(
    { name: "copy sender", command: process.execPath, args: [script, "send", String(size)], env: cleanEnv() },
    /copy peer listening on (\d+)/,
    30_000,
  );
  started.push(sender);
  const receivers = os.availableParallelism();
  const bytes = receivers * size * rounds;
  /** All receivers at once; the aggregate rate over the slowest one's time. */
  const rate = async (mode: "recv" | "fill"): Promise<number> => {
    const runs = await Promise.all(
      Array.from({ length: receivers }, async (_, i) => {
        const own = path.join(dir, `copy-${mode}-${i + 1}`);
        fs.mkdirSync(own, { recursive: true });
        const { child, match } = await Child.start(
          { name: `copy receiver ${i + 1} (${mode})`, command: process.execPath, args: [script, mode, port, String(size), String(rounds), own], env: cleanEnv() },
          /copied \d+ in ([\d.]+) ms/,
          120_000,
        );
        started.push(child);
        return Number(match);
      }),
    );
    return bytes / (Math.max(...runs) / 1000);
  };
  try {
    const bytesPerS = await rate("recv");
    const fillBytesPerS = await rate("fill");
    return { receivers, bytes, bytesPerS, fillBytesPerS };
  } finally {
    await sender.stop();
  }
}

export interface Memory {
  vmRssKb: number;
  rssAnonKb: number;
  pssKb: number;
}

function field(text: string, name: string): number | null {
  const m = new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, "m").exec(text);
  return m?.[1] === undefined ? null : Number(m[1]);
}

/** VmRSS and RssAnon (/proc/<pid>/status) and Pss (/proc/<pid>/smaps_rollup), or null. */
export function memoryOf(pid: number): Memory | null {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
    const rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
    const vmRssKb = field(status, "VmRSS");
    const rssAnonKb = field(status, "RssAnon");
    const pssKb = field(rollup, "Pss");
    return vmRssKb === null || rssAnonKb === null || pssKb === null ? null : { vmRssKb, rssAnonKb, pssKb };
  } catch {
    return null;
  }
}

/** The median of each figure over the processes. */
export function medianMemory(pids: number[]): Memory | null {
  const all = pids.map(memoryOf).filter((m): m is Memory => m !== null);
  if (all.length === 0) return null;
  const med = (f: (m: Memory) => number): number => median(all.map(f)) ?? 0;
  return { vmRssKb: med((m) => m.vmRssKb), rssAnonKb: med((m) => m.rssAnonKb), pssKb: med((m) => m.pssKb) };
}

/** A bare Node ESM http server (bench/bare-node-server.mjs) answering 4 KiB, idle for `idleMs`. */
export async function bareNodeMemory(workDir: string, idleMs: number): Promise<Memory | null> {
  const file = path.join(workDir, "bare-4k.bin");
  fs.writeFileSync(file, Buffer.alloc(4096, 1));
  const { child } = await Child.start(
    { name: "bare node", command: process.execPath, args: [path.join(REPO_ROOT, "bench", "bare-node-server.mjs"), file, "[]"], env: cleanEnv() },
    /bare node listening on (http:\/\/\S+)/,
    30_000,
  );
  started.push(child);
  try {
    await new Promise((r) => setTimeout(r, idleMs));
    return memoryOf(child.pid);
  } finally {
    await child.stop();
  }
}
