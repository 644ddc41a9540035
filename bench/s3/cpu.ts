// bench:s3's CPU lines (issue 27 point 9): the origin's CPU seconds per GiB (utime + stime of
// the whole process, every thread, from /proc) for PutObject and UploadPart with each payload
// form, beside Coffer's raw parts in the same run and against the same origin. Lines run in
// turn within a round, the order rotating each round so a warming machine favours none.

import { createHash, randomBytes } from "node:crypto";
import http from "node:http";
import { fmt, log, median } from "../common.js";
import { BenchS3, PAYLOAD_MODES, type PayloadMode } from "./client.js";

const GiB = 1024 ** 3;
/** The goal of issue 27 point 9: each S3 line at most this many times raw parts' CPU per GiB. */
export const CPU_GOAL = 1.15;

export interface CpuRun {
  s3Url: string;
  keyId: string;
  secret: string;
  bucket: string;
  file: string;
  size: number;
  part: number;
  parallel: number;
  rounds: number;
  originCpuMs(): number | null;
  /** Coffer's own raw-part upload of the file, the reference line. */
  raw(round: number): Promise<void>;
}

/**
 * The digests an S3 line computes beyond raw parts' one SHA-256 of the file, which no plumbing
 * can save: the MD5 that is the ETag (every line); a second SHA-256 where the signature covers
 * other bytes than the file (an UploadPart's signed payload is the part's hash, a streaming
 * body's the 64 KiB chunks'). A PutObject's signed payload is the file's hash, computed once.
 */
const EXTRA_DIGESTS: Record<string, { md5: number; sha256: number }> = {
  "PutObject, signed": { md5: 1, sha256: 0 },
  "UploadPart, signed": { md5: 1, sha256: 1 },
  "PutObject, UNSIGNED": { md5: 1, sha256: 0 },
  "UploadPart, UNSIGNED": { md5: 1, sha256: 0 },
  "PutObject, streaming": { md5: 1, sha256: 1 },
  "UploadPart, streaming": { md5: 1, sha256: 1 },
};

/** What one pass of each digest costs on this CPU, in CPU seconds per GiB (Node's crypto, 1 MiB updates, as the origin feeds it). */
export function digestCosts(): { md5: number; sha256: number } {
  const piece = randomBytes(1 << 20);
  const cost = (algorithm: string): number => {
    const start = process.cpuUsage();
    const hash = createHash(algorithm);
    for (let i = 0; i < 256; i++) hash.update(piece);
    hash.digest();
    const used = process.cpuUsage(start);
    return ((used.user + used.system) / 1e6) * 4;
  };
  cost("md5");
  return { md5: cost("md5"), sha256: cost("sha256") };
}

interface Line {
  name: string;
  run(round: number): Promise<void>;
  cpu: number[];
}

/** Waits until the origin is idle (under 20 ms of CPU in 300 ms; at most 15 s): the last line's edge prewarm is not counted in the next. */
async function settled(cpuMs: () => number | null): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const before = cpuMs() ?? 0;
    await new Promise((r) => setTimeout(r, 300));
    if ((cpuMs() ?? 0) - before < 20) return;
  }
}

const MODE_NAMES: Record<PayloadMode, string> = { signed: "signed payload", unsigned: "UNSIGNED-PAYLOAD", streaming: "streaming signed" };

/** The table's rows, and a note on the digests' costs. */
export async function cpuLines(c: CpuRun): Promise<{ rows: string[][]; note: string }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: c.parallel });
  const s3 = new BenchS3(c.s3Url, c.keyId, c.secret, agent);
  const lines: Line[] = [{ name: `raw parts (${c.part / 2 ** 20} MiB, ${c.parallel} in flight)`, run: c.raw, cpu: [] }];
  for (const mode of PAYLOAD_MODES) {
    lines.push({ name: `PutObject, ${MODE_NAMES[mode]}`, run: (round) => s3.putObject(c.bucket, `cpu-put-${mode}-${round}.bin`, { file: c.file, offset: 0, length: c.size }, mode), cpu: [] });
    lines.push({ name: `UploadPart, ${MODE_NAMES[mode]}`, run: (round) => s3.multipart(c.bucket, `cpu-mpu-${mode}-${round}.bin`, c.file, c.size, c.part, c.parallel, mode), cpu: [] });
  }
  try {
    for (let round = 1; round <= c.rounds; round++) {
      const shift = (round - 1) % lines.length;
      for (const line of [...lines.slice(shift), ...lines.slice(0, shift)]) {
        await settled(() => c.originCpuMs());
        const before = c.originCpuMs() ?? 0;
        await line.run(round);
        const seconds = ((c.originCpuMs() ?? 0) - before) / 1000;
        line.cpu.push(seconds / (c.size / GiB));
        log(`cpu round ${round}: ${line.name}: ${fmt(seconds / (c.size / GiB), 2)} s/GiB`);
      }
    }
  } finally {
    agent.destroy();
  }
  const raw = median(lines[0]!.cpu)!;
  const costs = digestCosts();
  const added = (name: string): number => {
    const d = Object.entries(EXTRA_DIGESTS).find(([prefix]) => name.startsWith(prefix))?.[1];
    return d ? d.md5 * costs.md5 + d.sha256 * costs.sha256 : 0;
  };
  const rows = [
    ["origin CPU per GiB (median of rounds)", "s/GiB", "x raw parts", `goal ≤ ${CPU_GOAL}x`, "digests added", "floor", "x raw, less digests", "rounds"],
    ...lines.map((l, i) => {
      const cpu = median(l.cpu)!;
      const ratio = cpu / raw;
      const extra = added(l.name);
      return [
        l.name, fmt(cpu, 2), `${fmt(ratio, 2)}x`, i === 0 ? "" : ratio <= CPU_GOAL ? "met" : "NOT met",
        i === 0 ? "" : fmt(extra, 2), i === 0 ? "" : `${fmt((raw + extra) / raw, 2)}x`, i === 0 ? "" : `${fmt((cpu - extra) / raw, 2)}x`, l.cpu.map((x) => fmt(x, 2)).join(" "),
      ];
    }),
  ];
  const note = `One pass on this CPU: MD5 ${fmt(costs.md5, 2)}, SHA-256 ${fmt(costs.sha256, 2)} s/GiB. "digests added": what the line must hash beyond raw parts' one SHA-256\n`
    + "(the MD5 that is the ETag; a second SHA-256 where the signature covers the part or the chunks); floor: raw parts plus those.";
  return { rows, note };
}
