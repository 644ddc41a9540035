// The disk's own figure: `dd if=/dev/zero of=<dir>/x bs=1M count=<MiB> conv=fdatasync`,
// the same number of bytes written and flushed, in the data directory of the runs.

import fs from "node:fs";
import path from "node:path";
import { runCommand } from "../common.js";

/** Seconds dd took (its own report, which includes the flush), then the file is removed. */
export async function ddSeconds(dir: string, sizeMiB: number, timeoutMs: number): Promise<number> {
  const target = path.join(dir, "x");
  try {
    const r = await runCommand("dd", ["if=/dev/zero", `of=${target}`, "bs=1M", `count=${Math.ceil(sizeMiB)}`, "conv=fdatasync"], timeoutMs, { ...process.env, LC_ALL: "C" });
    if (r.code !== 0) throw new Error(`dd failed (code ${r.code}): ${r.stderr.trim()}`);
    // "268435456 bytes (268 MB, 256 MiB) copied, 1.23 s, 218 MB/s"
    const m = /copied, ([\d.]+) s/.exec(r.stderr);
    if (!m) throw new Error(`dd's report was not understood: ${r.stderr.trim()}`);
    return Number(m[1]);
  } finally {
    fs.rmSync(target, { force: true });
  }
}

/** The dd command as the table shows it. */
export const ddCommand = (sizeMiB: number): string => `dd if=/dev/zero of=<datadir>/x bs=1M count=${Math.ceil(sizeMiB)} conv=fdatasync`;
