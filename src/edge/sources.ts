/**
 * Where an edge's fills come from (issue 26, tiers): each parent edge in the order
 * configured, then the origin. A parent is asked for one version of the file (its SHA-256)
 * at the sequence this edge has applied, and must name that version before a byte is taken;
 * any failure of a parent gives way to the next source (cache.ts), so a dead parent costs
 * one refused connection and a silent one PARENT_IDLE_MS.
 */
import type { ChunkConsumer } from './blob-fetch.js';
import { fetchBlobRaw } from './blob-fetch.js';
import type { OriginClient } from './origin-client.js';
import type { EdgeFile } from './state.js';

/** One place a fill may come from: a parent edge or the origin, tried in order. */
export interface FillSource {
  kind: 'parent' | 'origin';
  /**
   * `onAlive`: anything arrived from upstream, interim answers included. `via`: the edges the
   * request that started this fill passed through (empty for this edge's own).
   */
  fetch(file: EdgeFile, onChunk: ChunkConsumer, onAlive: () => void, via: readonly string[]): Promise<'ok' | 'not_found'>;
}

/** Fills by where their bytes came from, and sources given up on for the next, since start. */
export class FillCounts {
  parent = 0;
  origin = 0;
  failovers = 0;
  /** Fills this edge served to its children (tier-route.ts). */
  servedToChildren = 0;
}

/** Nothing at all from a parent (no byte, no 102 Processing) for this long: it is given up on. */
export const PARENT_IDLE_MS = 3000;
/**
 * A parent's whole answer, 102s and bytes, must come within PARENT_BASE_MS plus the file's size
 * twice (origin to parent, parent to child) at PARENT_MIN_RATE: the idle bound alone lets a
 * parent trickle a byte or a 102 now and then and hold a fill forever.
 */
export const PARENT_MIN_RATE = 256 * 1024;
export const PARENT_BASE_MS = 8000;
/** Capped at the longest delay a timer takes (about 24.8 days); a longer one would fire at once. */
export const parentDeadlineMs = (size: number): number => Math.min(PARENT_BASE_MS + Math.ceil((2 * size * 1000) / PARENT_MIN_RATE), 2 ** 31 - 1);
/** The header naming the edges a fill request passed through, the asker last. */
export const VIA_HEADER = 'x-coffer-via';

export interface SourceOptions {
  origin: OriginClient;
  parents: readonly OriginClient[];
  token: string;
  /** This edge's id, added to the Via list it sends. */
  edgeId: () => string;
  /** The sequence this edge has applied: a parent behind it does not answer. */
  seq: () => number;
}

export function fillSources(o: SourceOptions): FillSource[] {
  const parents = o.parents.map((parent): FillSource => ({
    kind: 'parent',
    fetch: (file, onChunk, onAlive, via) => fetchBlobRaw(parent, o.token, file.file_id, onChunk, {
      path: `/_edge/blob/${encodeURIComponent(file.file_id)}?sha256=${file.sha256}&seq=${o.seq()}`,
      headers: { 'X-Coffer-Via': [...via, o.edgeId()].join(',') },
      idleMs: PARENT_IDLE_MS,
      deadlineMs: parentDeadlineMs(file.size),
      sha256: file.sha256,
      onAlive,
    }),
  }));
  const origin: FillSource = {
    kind: 'origin',
    fetch: (file, onChunk, onAlive) => fetchBlobRaw(o.origin, o.token, file.file_id, onChunk, { onAlive }),
  };
  return [...parents, origin];
}
