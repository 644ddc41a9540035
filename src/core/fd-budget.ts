/**
 * How many connections each listener of a process may hold when COFFER_MAX_CONNECTIONS is
 * not set: a share of the process's open-file limit. A reserve is kept first for what the
 * service opens itself (blobs, the database, cached copies, connections to the origin, to S3
 * and to webhook receivers); the rest is split evenly between the process's listeners, so a
 * flood of one leaves the others, and the service, the descriptors they need.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, type ConnectionCaps } from './listener-bounds.js';

/** Used when the limit cannot be read, and for "unlimited". */
const FALLBACK_LIMIT = 1024;
const UNLIMITED = 1_048_576;

/** A connection may hold a second descriptor: the blob or cached file it reads or writes. */
const DESCRIPTORS_PER_CONNECTION = 2;

/** The soft "Max open files" of /proc/self/limits (Linux); Node raised it to the hard limit as it started. */
export function parseProcLimits(text: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith('Max open files'));
  const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
  if (soft === 'unlimited') return UNLIMITED;
  const n = Number(soft);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/** The process's limit on open descriptors (RLIMIT_NOFILE). */
export function openFileLimit(): number {
  try {
    const n = parseProcLimits(readFileSync('/proc/self/limits', 'utf8'));
    if (n !== undefined) return n;
  } catch {
    // Not Linux: ask a shell, which inherits this process's limit.
  }
  try {
    const out = execFileSync('/bin/sh', ['-c', 'ulimit -n'], { encoding: 'utf8', timeout: 2000 }).trim();
    if (out === 'unlimited') return UNLIMITED;
    const n = Number(out);
    if (Number.isSafeInteger(n) && n > 0) return n;
  } catch {
    // No shell: the fallback below.
  }
  return FALLBACK_LIMIT;
}

/** Descriptors kept for the service's own use: a quarter of the limit, at least 128. */
export const reserveOf = (limit: number): number => Math.max(128, Math.floor(limit / 4));

/** Connections each of `listeners` listeners may hold under an open-file limit of `limit`. */
export function connectionBudget(listeners: number, limit = openFileLimit()): number {
  const share = (limit - reserveOf(limit)) / Math.max(1, listeners) / DESCRIPTORS_PER_CONNECTION;
  return Math.max(1, Math.floor(share));
}

/** The caps of one of a process's `listeners` listeners: those configured, else the defaults and its share of the budget. */
export function listenerCaps(config: { maxConnections?: number | undefined; maxConnectionsPerAddress?: number }, listeners: number): ConnectionCaps {
  return {
    maxConnections: config.maxConnections ?? connectionBudget(listeners),
    maxConnectionsPerAddress: config.maxConnectionsPerAddress ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
  };
}
