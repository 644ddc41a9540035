/**
 * The access commands of `coffer` (contract §10): `keys create|ls|revoke`, `grant` and
 * `revoke-links`. Like the other client commands, data goes to standard output and
 * messages to standard error; a key or a grant is printed alone so scripts can keep it.
 */
import { CofferError, type CofferClient, type KeyRecord } from '../sdk/index.js';
import { CliError, clientFor, json, visibilityArg, type ClientFlags, type Io } from './common.js';
import { resolveFolder } from './folder-path.js';
import { formatBytes, formatTime, safeText, table } from './format.js';
import { parseDuration, parseSize, untilText } from './units.js';

const SCOPES = ['read', 'write', 'admin'];

function scopesArg(given: string[]): string[] {
  const scopes = [...new Set(given.map((s) => s.toLowerCase()))];
  const unknown = scopes.filter((s) => !SCOPES.includes(s));
  if (scopes.length === 0 || unknown.length > 0) {
    throw new CliError(`${unknown.length ? `Unknown scope "${unknown[0]}": ` : ''}--scope takes read, write and admin, comma-separated, e.g. --scope read,write.`);
  }
  return scopes;
}

function durationArg(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const seconds = parseDuration(value);
  if (seconds === null || seconds < 1) throw new CliError(`--expires-in must be a number of seconds, or a number with s, m, h or d (e.g. 3600, 15m, 7d), not "${value}".`);
  return seconds;
}

function countArg(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value.trim())) throw new CliError(`${flag} must be a whole number, not "${value}".`);
  return Number(value);
}

/** The service names body fields; on the command line the user typed flags. */
const FLAG_OF_FIELD: Record<string, string> = {
  name: '--name', scopes: '--scope', folder_id: '--folder', expires_in: '--expires-in', max_size: '--max-size',
  max_files: '--max-files', content_types: '--type', visibility: '--visibility',
};

async function asFlags<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (err) {
    const field = err instanceof CofferError ? err.details.field : undefined;
    if (err instanceof CofferError && typeof field === 'string' && FLAG_OF_FIELD[field]) {
      const flag = FLAG_OF_FIELD[field]!;
      throw new CofferError(err.status, err.code, err.message.replaceAll(`"${field}"`, flag), err.details);
    }
    throw err;
  }
}

// keys create

export interface CreateFlags extends ClientFlags {
  name: string;
  scope: string[];
  folder?: string;
  expiresIn?: string;
  json?: boolean;
}

export async function createKey(flags: CreateFlags, io: Io): Promise<void> {
  const scopes = scopesArg(flags.scope);
  const expiresIn = durationArg(flags.expiresIn);
  const client = await clientFor(flags, io);
  const folder = await resolveFolder(client, flags.folder);
  const key = await asFlags(client.createKey({
    name: flags.name, scopes, ...(folder.id !== null ? { folder_id: folder.id } : {}), ...(expiresIn !== undefined ? { expires_in: expiresIn } : {}),
  }));
  if (flags.json) json(io, key);
  else io.stdout.write(key.key + '\n');
  // A confined caller's keys default to its own folder: show what the service chose.
  const where = key.folder_id === null ? 'every folder' : `folder ${safeText(key.folder_id === folder.id ? folder.shown : key.folder_id)} and what is inside it`;
  io.stderr.write(`created key ${key.key_id} "${safeText(key.name)}": ${key.scopes.join(', ')} on ${where}; ${key.expires_at ? `expires ${formatTime(key.expires_at)}` : 'never expires'}\n`);
  io.stderr.write(`The key is shown only this once: store it now. \`coffer keys revoke ${key.key_id}\` ends it.\n`);
}

// keys ls

/** Folder ids as paths where the key may read them; the id where it may not (or the folder is gone). */
async function folderPaths(client: CofferClient, keys: KeyRecord[]): Promise<Map<string, string>> {
  const ids = [...new Set(keys.map((k) => k.folder_id).filter((id): id is string => id !== null))];
  const paths = await Promise.all(ids.map((id) => client.getFolder(id).then((f) => safeText(f.path), () => id)));
  return new Map(ids.map((id, i) => [id, paths[i]!]));
}

export async function listKeys(flags: ClientFlags & { json?: boolean }, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  const { keys } = await client.listKeys();
  if (flags.json) return json(io, { keys });
  const now = Date.now();
  const active = keys.filter((k) => k.revoked_at === null && (k.expires_at === null || Date.parse(k.expires_at) > now)).length;
  io.stderr.write(`${keys.length} key(s), ${active} active. The root key (COFFER_ACCESS_KEY) is not listed.\n`);
  if (keys.length === 0) {
    io.stderr.write('Make one with `coffer keys create --name NAME --scope read`.\n');
    return;
  }
  const paths = await folderPaths(client, keys);
  const rows = [['ID', 'NAME', 'SCOPES', 'FOLDER', 'CREATED', 'EXPIRES', 'LAST USED', 'REVOKED', 'MADE BY']];
  for (const k of keys) {
    const expires = k.expires_at === null ? 'never' : `${formatTime(k.expires_at)}${Date.parse(k.expires_at) <= now ? ' (expired)' : ''}`;
    rows.push([
      k.key_id, safeText(k.name), k.scopes.join(','), k.folder_id === null ? '/ (all)' : paths.get(k.folder_id)!,
      formatTime(k.created_at), expires, k.last_used_at ? formatTime(k.last_used_at) : 'never', k.revoked_at ? formatTime(k.revoked_at) : '-',
      // A key stops working with the key that made it: the lineage shows which.
      k.created_by,
    ]);
  }
  io.stdout.write(table(rows) + '\n');
}

// keys revoke

export async function revokeKey(keyId: string, flags: ClientFlags & { json?: boolean }, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  let result;
  try {
    result = await client.revokeKey(keyId);
  } catch (err) {
    if (err instanceof CofferError && err.code === 'key_not_found') throw new CliError(`${err.message} List the keys with \`coffer keys ls\`.`);
    throw err;
  }
  io.stderr.write(`revoked key ${result.key_id} (at ${formatTime(result.revoked_at)}): it no longer works, at any origin\n`);
  if (flags.json) json(io, result);
}

// grant

export interface GrantFlags extends ClientFlags {
  folder?: string;
  visibility?: string;
  maxSize: string;
  type?: string[];
  expiresIn?: string;
  maxFiles?: string;
  json?: boolean;
}

export async function grant(flags: GrantFlags, io: Io): Promise<void> {
  const maxSize = parseSize(flags.maxSize);
  if (maxSize === null) throw new CliError(`--max-size must be a size such as 1048576, 10MB or 5MiB, not "${flags.maxSize}".`);
  const visibility = flags.visibility === undefined ? undefined : visibilityArg(flags.visibility);
  const expiresIn = durationArg(flags.expiresIn);
  const maxFiles = countArg(flags.maxFiles, '--max-files');
  const client = await clientFor(flags, io);
  const folder = await resolveFolder(client, flags.folder);
  const result = await asFlags(client.createGrant({
    max_size: maxSize,
    ...(folder.id !== null ? { folder_id: folder.id } : {}),
    ...(visibility ? { visibility } : {}),
    ...(flags.type?.length ? { content_types: flags.type } : {}),
    ...(expiresIn !== undefined ? { expires_in: expiresIn } : {}),
    ...(maxFiles !== undefined ? { max_files: maxFiles } : {}),
  }));
  if (flags.json) json(io, result);
  else io.stdout.write(result.grant + '\n');
  const what = `${maxFiles ?? 1} file(s) of at most ${formatBytes(maxSize)} (${maxSize} bytes), ${flags.type?.length ? flags.type.join(', ') : 'any type'}, ${visibility ?? 'Public or Private'}`;
  io.stderr.write(`grant for ${what}${folder.id !== null ? `, into ${safeText(folder.shown)}` : ''}\n`);
  io.stderr.write(`expires ${formatTime(result.expires_at)} (${untilText(result.expires_at)}; ${result.expires_at})\n`);
}

// revoke-links

export async function revokeLinks(fileId: string, flags: ClientFlags & { json?: boolean }, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  const result = await client.revokeLinks(fileId);
  io.stderr.write(`links to file ${result.file_id} issued until ${result.links_revoked_at} now answer 403 at every edge; new links (\`coffer link ${result.file_id}\`) work\n`);
  if (flags.json) json(io, result);
}
