// What this machine can do, measured in the same run as the fleet: how fast it copies bytes
// between local processes over a socket with every core busy, and how much memory an idle
// process uses (each edge, and a bare Node http server for contrast).

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
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

const COPY_PEER = path.join(HERE, "copy-peer.mjs");

/** The copy peer serving `size` bytes to every connection, and its port. */
async function startSender(size: number): Promise<{ sender: Child; port: string }> {
  const { child: sender, match: port } = await Child.start(
    { name: "copy sender", command: process.execPath, args: [COPY_PEER, "send", String(size)], env: cleanEnv() },
    /copy peer listening on (\d+)/,
    30_000,
  );
  started.push(sender);
  return { sender, port };
}

/**
 * One sender process (as the origin or a parent is) and one receiver per core, each reading
 * `size` bytes `rounds` times over its own connection at the same time: the aggregate rate,
 * once for bare bytes and once as fills into files under `dir`.
 */
export async function measureCopyRate(size: number, rounds: number, dir: string): Promise<CopyRate> {
  const { sender, port } = await startSender(size);
  const receivers = os.availableParallelism();
  const bytes = receivers * size * rounds;
  /** All receivers at once; the aggregate rate over the slowest one's time. */
  const rate = async (mode: "recv" | "fill"): Promise<number> => {
    const runs = await Promise.all(
      Array.from({ length: receivers }, async (_, i) => {
        const own = path.join(dir, `copy-${mode}-${i + 1}`);
        fs.mkdirSync(own, { recursive: true });
        const { child, match } = await Child.start(
          { name: `copy receiver ${i + 1} (${mode})`, command: process.execPath, args: [COPY_PEER, mode, port, String(size), String(rounds), own], env: cleanEnv() },
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

/** The same copies a prewarm makes, by as many processes, told to go at once (bench/README.md, "The goal lines"). */
export interface CopyFleet {
  receivers: number;
  /** Per round: ms from the go until the last receiver's copy was synced and checked. */
  roundsMs: number[];
  medianMs: number | null;
  /** Per round: the receivers' CPU per copy, and the sender's per copy sent, ms. */
  receiverCpuMs: number[];
  senderCpuMs: number[];
}

/**
 * One sender and `receivers` processes each making one verified fill per round (copy-peer.mjs
 * `fills`), started `batch` at a time like the edges, every round begun at once: the time the
 * machine takes for the prewarm's copies with nothing of Coffer's around them, fanned out the
 * same way.
 */
export async function measureCopyFleet(receivers: number, size: number, rounds: number, dir: string, batch: number): Promise<CopyFleet> {
  const { sender, port } = await startSender(size);
  const fleet: Child[] = [];
  try {
    for (let i = 0; i < receivers; i += batch) {
      await Promise.all(
        Array.from({ length: Math.min(batch, receivers - i) }, async (_, k) => {
          const own = path.join(dir, `copy-fleet-${i + k + 1}`);
          fs.mkdirSync(own, { recursive: true });
          const { child } = await Child.start(
            { name: `copy receiver ${i + k + 1}`, command: process.execPath, args: [COPY_PEER, "fills", port, String(size), String(rounds), own], env: cleanEnv() },
            /^(ready)$/m,
            60_000,
          );
          started.push(child);
          fleet.push(child);
        }),
      );
    }
    const cpu = (children: Child[]): number => children.reduce((n, c) => n + (c.cpuMs() ?? 0), 0);
    const result: CopyFleet = { receivers, roundsMs: [], medianMs: null, receiverCpuMs: [], senderCpuMs: [] };
    for (let r = 1; r <= rounds; r++) {
      await new Promise((res) => setTimeout(res, 1000));
      const [recv0, send0] = [cpu(fleet), cpu([sender])];
      const t0 = performance.now();
      const done = fleet.map((c) => c.waitForLine(new RegExp(`fill ${r} done in`), 120_000));
      for (const c of fleet) c.proc.stdin?.write("go\n");
      await Promise.all(done);
      result.roundsMs.push(performance.now() - t0);
      // A receiver's last figures are read before it exits: each waits for the next line.
      result.receiverCpuMs.push((cpu(fleet) - recv0) / receivers);
      result.senderCpuMs.push((cpu([sender]) - send0) / receivers);
    }
    result.medianMs = median(result.roundsMs);
    return result;
  } finally {
    await Promise.all([sender, ...fleet].map((c) => c.stop()));
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
