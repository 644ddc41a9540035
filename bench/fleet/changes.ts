// Changes every edge must acknowledge before the origin answers: deletes and visibility
// switches, each timed, checked at random edges right after, and the origin's CPU per change.

import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { KiB, createLink, fmt, header, log, pickRandom, sha256, type HttpResponse } from "../common.js";
import {
  CHECK_DELETED_SIGNED,
  CHECK_DELETED_UNSIGNED,
  CHECK_PRIVATE_SIGNED,
  CHECK_PRIVATE_UNSIGNED,
  CHECK_PUBLIC_UNSIGNED,
  describe,
  type Checks,
} from "./checks.js";
import type { Options } from "./options.js";
import { originCpuMs } from "./origin-counters.js";
import { edgeGet, waitAllHit } from "./probe.js";
import type { Fleet } from "./procs.js";
import { complete, sendParts } from "./upload.js";

export const SMALL_BYTES = 4 * KiB;
const LINK_EXPIRY_S = 3600;

interface SmallFile {
  fileId: string;
  deliveryPath: string;
  signedPath: string;
  data: Buffer;
}

export interface ChangeTimes {
  ms: number[];
  /** The origin's CPU over the change calls only, ms. */
  originCpuMs: number;
  /** All edges' CPU over the change calls only, ms. */
  edgesCpuMs: number;
}

const edgesCpuMs = (fleet: Fleet): number => fleet.edges.reduce((n, e) => n + (e.child.cpuMs() ?? 0), 0);

async function uploadSmall(fleet: Fleet, name: string, signal: AbortSignal): Promise<SmallFile> {
  const data = randomBytes(SMALL_BYTES);
  const up = await complete(fleet.api, await sendParts(fleet.api, data, name, signal), signal);
  const signedPath = await createLink(fleet.api, up.fileId, LINK_EXPIRY_S, signal);
  return { fileId: up.fileId, deliveryPath: up.deliveryPath, signedPath, data };
}

/** Waits until every edge has every file as a HIT (so a change has something cached to undo). */
async function waitFilesCached(fleet: Fleet, files: SmallFile[], opts: Options, signal: AbortSignal): Promise<void> {
  const t0 = performance.now();
  const results = await Promise.all(files.map((f) => waitAllHit(fleet.edges, f.deliveryPath, t0, opts, signal)));
  const missing = results.reduce((n, r) => n + r.hitMs.filter((x) => x === null).length, 0);
  if (missing > 0) log(`warning: ${missing} of ${files.length * fleet.edges.length} (edge, file) pairs were not HITs within ${opts.phaseTimeoutMs / 1000} s; measuring anyway`);
  else log(`${files.length} small files are HITs at all ${fleet.edges.length} edges (${fmt(performance.now() - t0, 0)} ms)`);
}

/** Times one change call and adds the origin's and the edges' CPU over it (read outside the timing). */
async function timed(fleet: Fleet, into: ChangeTimes, call: () => Promise<Record<string, unknown>>): Promise<Record<string, unknown>> {
  const edges0 = edgesCpuMs(fleet);
  const cpu0 = originCpuMs(fleet);
  const t0 = performance.now();
  const res = await call();
  into.ms.push(performance.now() - t0);
  into.originCpuMs += originCpuMs(fleet) - cpu0;
  into.edgesCpuMs += edgesCpuMs(fleet) - edges0;
  return res;
}

export async function deletePhase(fleet: Fleet, opts: Options, checks: Checks, signal: AbortSignal): Promise<ChangeTimes> {
  const files: SmallFile[] = [];
  for (let i = 0; i < opts.count; i++) files.push(await uploadSmall(fleet, `delete-${i + 1}.bin`, signal));
  await waitFilesCached(fleet, files, opts, signal);
  const out: ChangeTimes = { ms: [], originCpuMs: 0, edgesCpuMs: 0 };
  for (const [i, f] of files.entries()) {
    const res = await timed(fleet, out, () => fleet.api.post("/collections/file/delete", { file_id: f.fileId }, signal, 60_000));
    if (res.deleted !== true) throw new Error(`file/delete answered ${JSON.stringify(res)}, expected deleted: true`);
    const sample = pickRandom(fleet.edges, opts.verify);
    for (const edge of sample) {
      const r = await edgeGet(edge, f.deliveryPath);
      checks.record(CHECK_DELETED_UNSIGNED, r.status === 404, () => `file ${i + 1}, edge ${edge.index + 1}: ${describe(r)}`);
    }
    const edge = sample[0]!;
    const r = await edgeGet(edge, f.signedPath);
    checks.record(CHECK_DELETED_SIGNED, r.status === 404, () => `file ${i + 1}, edge ${edge.index + 1}: ${describe(r)}`);
  }
  return out;
}

export interface SwitchTimes extends ChangeTimes {
  toPrivateMs: number[];
  toPublicMs: number[];
}

export async function visibilityPhase(fleet: Fleet, opts: Options, checks: Checks, signal: AbortSignal): Promise<SwitchTimes> {
  const f = await uploadSmall(fleet, "visibility.bin", signal);
  await waitFilesCached(fleet, [f], opts, signal);
  const out: SwitchTimes = { ms: [], originCpuMs: 0, edgesCpuMs: 0, toPrivateMs: [], toPublicMs: [] };
  const update = async (visibility: "Public" | "Private"): Promise<void> => {
    const res = await timed(fleet, out, () => fleet.api.post("/collections/file/update", { file_id: f.fileId, visibility }, signal, 60_000));
    if (res.visibility !== visibility) throw new Error(`file/update answered visibility ${JSON.stringify(res.visibility)}, expected ${visibility}`);
    (visibility === "Private" ? out.toPrivateMs : out.toPublicMs).push(out.ms[out.ms.length - 1]!);
  };
  const sameBytes = (r: HttpResponse): boolean => r.status === 200 && r.body.length === f.data.length && sha256(r.body) === sha256(f.data);
  for (let i = 1; i <= opts.count; i++) {
    await update("Private");
    const sample = pickRandom(fleet.edges, opts.verify);
    for (const edge of sample) {
      const r = await edgeGet(edge, f.deliveryPath);
      checks.record(CHECK_PRIVATE_UNSIGNED, r.status === 403, () => `switch ${i}, edge ${edge.index + 1}: ${describe(r)}`);
    }
    const signed = await edgeGet(sample[0]!, f.signedPath);
    checks.record(CHECK_PRIVATE_SIGNED, sameBytes(signed), () => `switch ${i}, edge ${sample[0]!.index + 1}: ${describe(signed)}`);
    await update("Public");
    for (const e of pickRandom(fleet.edges, opts.verify)) {
      const r = await edgeGet(e, f.deliveryPath);
      checks.record(CHECK_PUBLIC_UNSIGNED, sameBytes(r), () => `switch ${i}, edge ${e.index + 1}: ${describe(r)}, X-Cache ${header(r, "x-cache") ?? "none"}`);
    }
  }
  return out;
}
