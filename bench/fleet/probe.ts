// Requests to the edges, fanned out over the whole fleet at once: waiting for HITs, and the
// floor (every edge answering one trivial request, the same way).

import http from "node:http";
import { performance } from "node:perf_hooks";
import { errorMessage, header, median, request, sleep, type HttpResponse } from "../common.js";
import type { Options } from "./options.js";
import type { Edge } from "./procs.js";

/** Keep-alive connections to the edges, at most 2 per edge. */
export const edgeAgent = new http.Agent({ keepAlive: true, maxSockets: 2 });

export function edgeGet(edge: Edge, pathQuery: string, method: "GET" | "HEAD" = "GET"): Promise<HttpResponse> {
  return request(`${edge.url}${pathQuery}`, { method, agent: edgeAgent, timeoutMs: 15_000 });
}

export interface HitWait {
  /** Per edge: ms from `t0` until its first HIT, or null if none within the limit. */
  hitMs: Array<number | null>;
  /** Answers other than 200 seen while waiting, by status (e.g. 404 before the edge heard of the file). */
  otherStatuses: Record<string, number>;
  /** Edges whose first answer was 200 MISS, 200 HIT, or something else. */
  firstAnswer: Record<string, number>;
  /** Each 503 seen: which edge, when, and the message of a GET sent right after it (why). */
  unavailable: Array<{ edge: number; parent: boolean; ms: number; why: string }>;
}

const bump = (m: Record<string, number>, key: string): void => {
  m[key] = (m[key] ?? 0) + 1;
};

/** HEADs every edge every pollMs until each answers 200 with X-Cache: HIT. */
export async function waitAllHit(edges: Edge[], pathQuery: string, t0: number, opts: Options, signal: AbortSignal): Promise<HitWait> {
  const result: HitWait = { hitMs: edges.map(() => null), otherStatuses: {}, firstAnswer: {}, unavailable: [] };
  const deadline = t0 + opts.phaseTimeoutMs;
  const parentUrls = new Set(edges.flatMap((e) => e.parents));
  await Promise.all(
    edges.map(async (edge, i) => {
      let first = true;
      while (!signal.aborted && performance.now() < deadline) {
        let res: HttpResponse | null = null;
        try {
          res = await edgeGet(edge, pathQuery, "HEAD");
        } catch (err) {
          bump(result.otherStatuses, errorMessage(err).slice(0, 60));
        }
        const now = performance.now();
        if (res !== null) {
          const cache = header(res, "x-cache") ?? "none";
          if (first) {
            bump(result.firstAnswer, res.status === 200 ? `200 ${cache}` : String(res.status));
            first = false;
          }
          if (res.status === 200 && cache === "HIT") {
            result.hitMs[i] = now - t0;
            return;
          }
          if (res.status !== 200) bump(result.otherStatuses, String(res.status));
          if (res.status === 503) {
            // A HEAD carries no body: a GET right after says which refusal it was, if it still holds.
            const again = await edgeGet(edge, pathQuery).catch((err: unknown) => ({ status: 0, body: Buffer.from(errorMessage(err)) }));
            const why = again.status === 503 ? again.body.toString("utf8").slice(0, 160) : `then ${again.status}`;
            result.unavailable.push({ edge: edge.index + 1, parent: parentUrls.has(edge.url), ms: Math.round(now - t0), why });
          }
        }
        await sleep(opts.pollMs, signal).catch(() => {});
      }
    }),
  );
  return result;
}

export interface Floor {
  /** Per round: ms until every edge answered GET /healthz. */
  roundsMs: number[];
  medianMs: number | null;
}

/**
 * The machine's floor for anything every edge must do: all of them answering GET /healthz,
 * asked at once over the same keep-alive agent the other checks use. One unrecorded round
 * first opens the connections.
 */
export async function measureFloor(edges: Edge[], rounds: number): Promise<Floor> {
  const once = async (): Promise<number> => {
    const t0 = performance.now();
    const answers = await Promise.all(edges.map((e) => edgeGet(e, "/healthz")));
    const ms = performance.now() - t0;
    const bad = answers.filter((r) => r.status !== 200 && r.status !== 503).length;
    if (bad > 0) throw new Error(`floor: ${bad} edges answered /healthz with neither 200 nor 503`);
    return ms;
  };
  await once();
  const roundsMs: number[] = [];
  for (let r = 0; r < rounds; r++) {
    roundsMs.push(await once());
    await sleep(50);
  }
  return { roundsMs, medianMs: median(roundsMs) };
}
