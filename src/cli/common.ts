/** What every client command of `coffer` shares: its output, its errors, its flags and its client. */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { CofferClient, CofferError, type ClientErrorCode, type ErrorCode } from '../sdk/index.js';
import { CREDENTIALS_FILE } from '../config/credentials.js';
import { clientError } from '../core/errors.js';
import { CliError, type ClientFlags, type Io } from './io.js';

export { CliError, defaultIo, type ClientFlags, type Io } from './io.js';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/**
 * The key comes from --key or COFFER_ACCESS_KEY; for a service on this machine, from the
 * credentials file `coffer serve` wrote, so a local try-out needs no copying.
 */
async function accessKeyFor(url: string, flags: ClientFlags, env: NodeJS.ProcessEnv): Promise<string> {
  const given = flags.key ?? env.COFFER_ACCESS_KEY;
  if (given) return given;
  let host = '';
  try {
    host = new URL(url).hostname;
  } catch {
    // Reported by the URL check.
  }
  const file = resolve(env.COFFER_DATA_DIR ?? './data', CREDENTIALS_FILE);
  if (LOOPBACK.has(host)) {
    try {
      const stored = JSON.parse(await readFile(file, 'utf8')) as { access_key?: unknown };
      if (typeof stored.access_key === 'string') return stored.access_key;
    } catch {
      // No local service data here.
    }
  }
  throw new CliError(`No access key: set COFFER_ACCESS_KEY or pass --key. The service printed it when it first started and keeps it in ${CREDENTIALS_FILE} in its data directory${LOOPBACK.has(host) ? ` (not found at ${file}; set COFFER_DATA_DIR to that directory)` : ''}.`);
}

/**
 * An edge answers every call of the programmatic interface (all POSTs) with 405 and
 * `Allow: GET, HEAD`, which no origin sends: seen, the command says what is wrong with the
 * URL instead of "method not allowed".
 */
function edgeAware(setting: string): typeof fetch {
  return async (input, init) => {
    const res = await globalThis.fetch(input, init);
    if (res.status === 405 && (init?.method ?? 'GET') !== 'GET' && /^\s*GET\s*,\s*HEAD\s*$/i.test(res.headers.get('allow') ?? '')) {
      await res.body?.cancel();
      throw clientError('not_an_origin', `${setting} points at an edge (the delivery network); give the origin's URL.`, res.status);
    }
    return res;
  };
}

export async function clientFor(flags: ClientFlags, io: Io): Promise<CofferClient> {
  const url = (flags.url ?? io.env.COFFER_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]+/i.test(url)) throw new CliError(`"${url}" is not a service address: give the origin's URL, e.g. http://127.0.0.1:8080.`);
  const setting = flags.url !== undefined ? '--url' : 'COFFER_URL';
  return new CofferClient({ url, accessKey: await accessKeyFor(url, flags, io.env), fetch: edgeAware(setting) });
}

export function json(io: Io, value: unknown): void {
  io.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

export function wholeNumber(value: string, name: string, min: number, max: number): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n < min || n > max) throw new CliError(`${name} must be a whole number from ${min} to ${max}.`);
  return n;
}

/** `root` and `/` name the root folder on the command line. */
export const folderArg = (value: string | undefined): string | null => (value === undefined || value === 'root' || value === '/' ? null : value);

export function visibilityArg(value: string): 'Public' | 'Private' {
  const v = value.trim().toLowerCase();
  if (v === 'public') return 'Public';
  if (v === 'private') return 'Private';
  throw new CliError(`Visibility must be "public" or "private", not "${value}".`);
}

export const isCode = (err: unknown, code: ErrorCode | ClientErrorCode): err is CofferError => err instanceof CofferError && err.code === code;
