/**
 * The access key, the signing secret and the edges' credential: taken from the
 * configuration, or generated on the first start and kept in the data directory, readable
 * by the owner alone. Each is independent: the edge token is never derived from the
 * signing secret, which application servers hold to sign links.
 */
import { randomBytes } from 'node:crypto';
import { chmod, link, open, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { newSecret } from '../core/ids.js';

export interface Credentials {
  accessKey: string;
  signingSecrets: string[];
  /** Every edge token the origin accepts; an edge presents the first. */
  edgeTokens: string[];
}

/** What a start generated, told once so the operator sees it once. */
export type Generated = Partial<Record<'accessKey' | 'signingSecret' | 'edgeToken', string>>;

interface StoredCredentials {
  access_key?: string;
  signing_secret?: string;
  edge_token?: string;
}

const FIELDS = ['access_key', 'signing_secret', 'edge_token'] as const;

export const CREDENTIALS_FILE = 'credentials.json';

/** Why an edge cannot start without its credential, and where the operator finds it. */
export const MISSING_EDGE_TOKEN = 'An edge needs COFFER_EDGE_TOKEN, the edges\' credential for the origin\'s feed: the origin printed it on its first start, and keeps it as "edge_token" in credentials.json in its data directory (or it is the first value of the origin\'s own COFFER_EDGE_TOKEN).';

async function readStored(path: string): Promise<StoredCredentials | null> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  const damaged = new Error(`${path} is damaged: it must be a JSON object holding "access_key", "signing_secret" and "edge_token" as strings.`);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw damaged;
  const record = parsed as Record<string, unknown>;
  const stored: StoredCredentials = {};
  for (const field of FIELDS) {
    const value = record[field];
    if (value === undefined) continue;
    if (typeof value !== 'string' || value === '') throw damaged;
    stored[field] = value;
  }
  return stored;
}

/**
 * Writes the file in one step: a crash leaves the old file or the new one, never half of
 * one. `create` makes it only if absent (returns false when another start made it first).
 */
async function writeStored(path: string, creds: StoredCredentials, create: boolean): Promise<boolean> {
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const handle = await open(tmp, 'wx', 0o600);
  try {
    // The umask may have narrowed the mode further, never widened it; set it exactly.
    await handle.chmod(0o600);
    await handle.writeFile(JSON.stringify(creds, null, 2) + '\n');
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    if (create) {
      try {
        await link(tmp, path);
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
        // A file system without hard links: replacing is the next best thing.
        if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
      }
    }
    await rename(tmp, path);
    return true;
  } finally {
    await rm(tmp, { force: true });
  }
}

/**
 * Resolves the three credentials. What the configuration leaves unset comes from
 * credentials.json, generated and added to it when missing there (an older file without
 * `edge_token` gains one). `announce` is called once with what was generated.
 */
export async function resolveCredentials(
  dataDir: string,
  configured: { accessKey: string | undefined; signingSecrets: string[]; edgeTokens: string[] },
  announce: (generated: Generated) => void,
): Promise<Credentials> {
  const fromConfig = {
    access_key: configured.accessKey,
    signing_secret: configured.signingSecrets.length > 0 ? configured.signingSecrets : undefined,
    edge_token: configured.edgeTokens.length > 0 ? configured.edgeTokens : undefined,
  };
  if (fromConfig.access_key && fromConfig.signing_secret && fromConfig.edge_token) {
    return { accessKey: fromConfig.access_key, signingSecrets: fromConfig.signing_secret, edgeTokens: fromConfig.edge_token };
  }
  const path = join(dataDir, CREDENTIALS_FILE);
  for (let attempt = 0; ; attempt++) {
    const resolved = await resolveFromFile(path, fromConfig, announce);
    if (resolved) return resolved;
    // Another process sharing the data dir created the file meanwhile: use its values.
    if (attempt >= 3) throw new Error(`${path} keeps changing while it is read.`);
  }
}

async function resolveFromFile(
  path: string,
  fromConfig: { access_key: string | undefined; signing_secret: string[] | undefined; edge_token: string[] | undefined },
  announce: (generated: Generated) => void,
): Promise<Credentials | null> {
  const existing = await readStored(path);
  const stored: StoredCredentials = { ...existing };
  const generated: Generated = {};
  // A first start writes all three, so dropping a setting later finds a value waiting.
  if (!existing) {
    stored.access_key = newSecret('coffer_key');
    stored.signing_secret = newSecret('coffer_secret');
    if (!fromConfig.access_key) generated.accessKey = stored.access_key;
    if (!fromConfig.signing_secret) generated.signingSecret = stored.signing_secret;
  }
  if (!stored.edge_token) {
    stored.edge_token = newSecret('coffer_edge');
    if (!fromConfig.edge_token) generated.edgeToken = stored.edge_token;
  }
  for (const field of ['access_key', 'signing_secret'] as const) {
    if (!stored[field] && !fromConfig[field]) throw new Error(`${path} has no "${field}": set ${field === 'access_key' ? 'COFFER_ACCESS_KEY' : 'COFFER_SIGNING_SECRET'} or restore the file.`);
  }
  if (!existing || !existing.edge_token) {
    if (!(await writeStored(path, stored, !existing))) return null;
  } else {
    // Kept private even if someone loosened it.
    await chmod(path, 0o600).catch(() => {});
  }
  if (Object.keys(generated).length > 0) announce(generated);
  return {
    accessKey: fromConfig.access_key ?? stored.access_key!,
    signingSecrets: fromConfig.signing_secret ?? [stored.signing_secret!],
    edgeTokens: fromConfig.edge_token ?? [stored.edge_token],
  };
}
