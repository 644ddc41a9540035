// CPU time of the upload benchmark's processes, per round: the server of the line, what it
// runs on (PostgreSQL and s3rver for postgres-s3), this process (the client), and the rest
// of the machine, so a round on a busy machine can be told from one on an idle machine.

import fs from "node:fs";
import { cpuTicks, procCpuMs, sleep, type Child } from "../common.js";

/** Clock ticks per second of /proc/stat (USER_HZ, 100 on Linux). */
const TICK_MS = 10;

/** User + system CPU ms of `root` and every process descending from it (PostgreSQL's backends). */
export function treeCpuMs(root: number): number | null {
  const parentOf = new Map<number, number>();
  const cpu = new Map<number, number>();
  let entries: string[];
  try {
    entries = fs.readdirSync("/proc");
  } catch {
    return null;
  }
  for (const name of entries) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    try {
      const text = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
      parentOf.set(pid, Number(fields[1]));
      cpu.set(pid, (Number(fields[11]) + Number(fields[12])) * TICK_MS);
    } catch {
      // exited meanwhile
    }
  }
  if (!cpu.has(root)) return null;
  let total = 0;
  for (const [pid, ms] of cpu) {
    for (let p: number | undefined = pid, depth = 0; p !== undefined && p > 1 && depth < 64; p = parentOf.get(p), depth++) {
      if (p === root) {
        total += ms;
        break;
      }
    }
  }
  return total;
}

/** What a round's CPU is split into, in ms. */
export interface CpuSplit {
  /** The line's server: the origin or @tus/server. */
  serverMs: number | null;
  /** What the server stores into on postgres-s3 (PostgreSQL and s3rver); 0 elsewhere. */
  helpersMs: number | null;
  /** This process: the client. */
  clientMs: number;
  /** Every other process of the machine (busy time of /proc/stat less the above). */
  otherMs: number | null;
}

/** CPU counters read at a round's start; `split()` at its end gives the round's figures. */
export class CpuWindow {
  private readonly server0: number | null;
  private readonly helpers0: number | null;
  private readonly client0 = process.cpuUsage();
  private readonly machine0 = cpuTicks(null);

  constructor(private readonly server: Child | null, private readonly helpers: () => number | null) {
    this.server0 = server?.cpuMs() ?? null;
    this.helpers0 = helpers();
  }

  split(): CpuSplit {
    const c = process.cpuUsage(this.client0);
    const clientMs = (c.user + c.system) / 1000;
    const server1 = this.server?.cpuMs() ?? null;
    const helpers1 = this.helpers();
    const machine1 = cpuTicks(null);
    const serverMs = this.server0 === null || server1 === null ? null : server1 - this.server0;
    const helpersMs = this.helpers0 === null || helpers1 === null ? null : helpers1 - this.helpers0;
    const machineMs = this.machine0 === null || machine1 === null ? null : (machine1.busy - this.machine0.busy) * TICK_MS;
    const otherMs = machineMs === null ? null : Math.max(0, machineMs - clientMs - (serverMs ?? 0) - (helpersMs ?? 0));
    return { serverMs, helpersMs, clientMs, otherMs };
  }
}

/**
 * Waits until the server has stopped using CPU (no tick in 100 ms, at most 3 s): what a
 * round leaves behind (emptying the trash of the file the cleanup deleted, a flush, a
 * collection) is then not counted in the next round on the same server. Returns the CPU ms
 * the server used since `since` (its figure when the round's window closed).
 */
export async function settle(server: Child | null, since: number | null): Promise<number | null> {
  if (server === null) return null;
  const deadline = Date.now() + 3000;
  let last = procCpuMs(server.pid);
  while (last !== null && Date.now() < deadline) {
    await sleep(100);
    const now = procCpuMs(server.pid);
    if (now === null || now === last) break;
    last = now;
  }
  return since === null || last === null ? null : last - since;
}
