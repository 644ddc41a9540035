/**
 * The client commands of `coffer` (contract §8): they talk to a running service through
 * the SDK. Data goes to standard output; progress and messages to standard error.
 */
import { createHash } from 'node:crypto';
import { createWriteStream, rmSync, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { readFile, readdir, rename, rm, stat } from 'node:fs/promises';
import { basename, join, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import mime from 'mime';
import {
  CofferClient, CofferError, Limiter, type FileRecord, type FolderRecord, type ListResponse,
} from '../sdk/index.js';
import { fileFromPath } from '../sdk/node.js';
import { CREDENTIALS_FILE } from '../config/credentials.js';
import { formatBytes, formatTime, safeText, table } from './format.js';
import { Progress } from './progress.js';
import { pathInside } from './safe-name.js';
import { ResumeStore, defaultStatePath, resumeKey } from './resume-store.js';

export interface Io {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown; isTTY?: boolean; columns?: number };
  env: NodeJS.ProcessEnv;
}

const defaultIo = (): Io => ({ stdout: process.stdout, stderr: process.stderr, env: process.env });

/** A failure of the command itself, reported as its message alone. */
export class CliError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
  }
}

export interface ClientFlags {
  url?: string;
  key?: string;
}

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

export async function clientFor(flags: ClientFlags, io: Io): Promise<CofferClient> {
  const url = (flags.url ?? io.env.COFFER_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]+/i.test(url)) throw new CliError(`"${url}" is not a service address: give the origin's URL, e.g. http://127.0.0.1:8080.`);
  return new CofferClient({ url, accessKey: await accessKeyFor(url, flags, io.env) });
}

function json(io: Io, value: unknown): void {
  io.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

function wholeNumber(value: string, name: string, min: number, max: number): number {
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

const isCode = (err: unknown, code: string): err is CofferError => err instanceof CofferError && err.code === code;

const notFound = (id: string) => new CliError(`No file or folder has the id "${id}". List a folder with \`coffer ls\` to see the ids.`);

/** Runs the file form of a change, or the folder form when the id is not a file's. */
async function fileOrFolder<F, D>(id: string, onFile: () => Promise<F>, onFolder: () => Promise<D>): Promise<{ kind: 'file'; value: F } | { kind: 'folder'; value: D }> {
  try {
    return { kind: 'file', value: await onFile() };
  } catch (err) {
    if (!isCode(err, 'file_not_found')) throw err;
  }
  try {
    return { kind: 'folder', value: await onFolder() };
  } catch (err) {
    if (isCode(err, 'folder_not_found') && (err.details.field ?? 'folder_id') === 'folder_id' && err.details.folder_id === id) throw notFound(id);
    throw err;
  }
}

const describe = (kind: 'file' | 'folder', r: FileRecord | FolderRecord): string =>
  kind === 'folder' ? `folder ${safeText((r as FolderRecord).path)}` : `file ${safeText(r.name)}`;

// upload

interface UploadJob {
  path: string;
  name: string;
  size: number;
  mtimeMs: number;
  folderId: string | null;
}

interface UploadFlags extends ClientFlags {
  folder?: string;
  private?: boolean;
  concurrency?: string;
  json?: boolean;
  /** Parts as base64 in JSON, the form every Coffer server takes, instead of raw bytes. */
  compat?: boolean;
}

async function ensureFolder(client: CofferClient, io: Io, name: string, parentId: string | null, visibility: 'Public' | 'Private'): Promise<string> {
  try {
    const created = await client.createFolder({ name, visibility, parent_id: parentId });
    io.stderr.write(`created folder ${safeText(created.path)} (${created.visibility})\n`);
    return created.folder_id;
  } catch (err) {
    // Running the same upload again fills the folders it made before.
    if (isCode(err, 'folder_exists') && typeof err.details.folder_id === 'string') return err.details.folder_id;
    throw err;
  }
}

async function planUpload(client: CofferClient, io: Io, paths: string[], rootFolder: string | null, visibility: 'Public' | 'Private'): Promise<UploadJob[]> {
  const jobs: UploadJob[] = [];
  const addFile = (path: string, size: number, mtimeMs: number, folderId: string | null) =>
    jobs.push({ path, name: basename(path), size, mtimeMs, folderId });
  const walk = async (dir: string, parentId: string | null): Promise<void> => {
    const folderId = await ensureFolder(client, io, basename(resolve(dir)), parentId, visibility);
    const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        await walk(path, folderId);
        continue;
      }
      // Links to files are followed; links to folders are not, so a loop cannot recur forever.
      const st = await stat(path).catch(() => null);
      if (st?.isFile()) addFile(path, st.size, st.mtimeMs, folderId);
      else io.stderr.write(`skipped ${safeText(path)}: not a regular file or folder\n`);
    }
  };
  for (const path of paths) {
    const st = await stat(path).catch((err: NodeJS.ErrnoException) => {
      throw new CliError(`${path}: ${err.code === 'ENOENT' ? 'no such file or folder' : err.message}.`);
    });
    if (st.isDirectory()) await walk(path, rootFolder);
    else if (st.isFile()) addFile(path, st.size, st.mtimeMs, rootFolder);
    else throw new CliError(`${path}: not a regular file or folder.`);
  }
  return jobs;
}

/** Runs `work` over the items with at most `width` at once; stops taking new items once `stop` aborts. */
async function pool<T>(items: T[], width: number, stop: AbortSignal, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length && !stop.aborted) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
}

async function upload(paths: string[], flags: UploadFlags, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  const visibility = flags.private ? 'Private' : 'Public';
  const concurrency = wholeNumber(flags.concurrency ?? '4', '--concurrency', 1, 64);
  const jobs = await planUpload(client, io, paths, folderArg(flags.folder), visibility);
  if (jobs.length === 0) {
    io.stderr.write('No files to upload.\n');
    if (flags.json) json(io, []);
    return;
  }

  const progress = new Progress(io.stderr, { live: io.stderr.isTTY === true, verb: 'uploaded', files: jobs.length });
  for (const job of jobs) progress.expect(job.size);
  const store = new ResumeStore(io.env.COFFER_STATE_FILE ?? defaultStatePath(io.env));
  const limiter = new Limiter(concurrency);
  const stop = new AbortController();
  const onSignal = () => stop.abort(new CliError('Interrupted.', 130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  const results: Array<Record<string, unknown>> = [];
  let failed = 0;
  let fatal: unknown = null;
  try {
    await pool(jobs, Math.min(concurrency, 8), stop.signal, async (job) => {
      const order = jobs.indexOf(job);
      const key = resumeKey({ url: client.url, path: resolve(job.path), size: job.size, mtimeMs: job.mtimeMs, folderId: job.folderId, visibility });
      const resume = await store.find(key);
      const display = relative('.', job.path) || job.path;
      const task = progress.start(display, job.size);
      let first = true;
      try {
        const contentType = mime.getType(job.name) ?? undefined;
        const file = await fileFromPath(job.path, contentType ? { type: contentType } : {});
        const record = await client.uploadFile(file, {
          name: job.name, folderId: job.folderId, visibility, concurrency, limiter, signal: stop.signal, partEncoding: flags.compat ? 'json' : 'raw',
          ...(contentType ? { contentType } : {}),
          ...(resume ? { resume } : {}),
          onSession: (session) => void store.save(key, session),
          onProgress: (p) => {
            if (first && p.loaded > 0) progress.print(`resuming ${safeText(display)}: ${p.partsDone} of ${p.partCount} parts already stored`);
            task.update(p.loaded, { initial: first });
            first = false;
          },
        });
        await store.remove(key);
        task.done(record.file_id);
        if (!flags.json) progress.above(() => io.stdout.write(`${record.file_id}\t${record.delivery_url ?? ''}\t${display}\n`));
        results.push({ order, path: display, ...record });
      } catch (err) {
        if (stop.signal.aborted) {
          task.fail('interrupted');
          return;
        }
        const message = err instanceof Error ? err.message : String(err);
        task.fail(message);
        failed++;
        results.push({ order, path: display, error: err instanceof CofferError ? { code: err.code, message: err.message, details: err.details } : { code: 'error', message } });
        // A wrong key or an unreachable service fails every file alike: stop at the first.
        if (err instanceof CofferError && (err.status === 401 || err.status === 0)) {
          fatal = err;
          stop.abort(err);
        }
      }
    });
  } finally {
    progress.end();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  // In the order the paths were given, whatever order the uploads finished in.
  if (flags.json) json(io, results.sort((a, b) => (a.order as number) - (b.order as number)).map(({ order: _, ...r }) => r));
  if (fatal) throw fatal;
  if (stop.signal.aborted) {
    throw new CliError('Interrupted. Run the same command again to resume: the parts already sent are kept until the upload expires (24 hours by default).', 130);
  }
  if (failed > 0) throw new CliError(`${failed} of ${jobs.length} file(s) failed to upload; ${failed === jobs.length ? 'none was uploaded' : 'the others were uploaded'}.`);
}

// ls

interface ListFlags extends ClientFlags {
  json?: boolean;
  sort?: string;
  order?: string;
}

function visibilityCell(r: FileRecord | FolderRecord): string {
  return r.effective_visibility === r.visibility ? r.visibility : `${r.effective_visibility} (inherited)`;
}

async function ls(folder: string | undefined, flags: ListFlags, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  const sort = flags.sort ?? 'name';
  if (!['name', 'created_at', 'updated_at', 'size'].includes(sort)) throw new CliError('--sort must be name, created_at, updated_at or size.');
  const order = flags.order ?? 'asc';
  if (!['asc', 'desc'].includes(order)) throw new CliError('--order must be asc or desc.');
  let all: ListResponse | null = null;
  for await (const page of client.listPages({ folder_id: folderArg(folder), limit: 1000, sort: sort as 'name', order: order as 'asc' })) {
    if (all === null) all = { ...page, folders: [...page.folders], files: [...page.files] };
    else {
      all.folders.push(...page.folders);
      all.files.push(...page.files);
    }
  }
  const listing = all!;
  listing.next_cursor = null;
  if (flags.json) return json(io, listing);
  const where = listing.folder ? `${safeText(listing.folder.path)} (${visibilityCell(listing.folder)})` : '/ (root)';
  io.stderr.write(`${where}: ${listing.folders.length} folder(s), ${listing.files.length} file(s)\n`);
  if (listing.folders.length + listing.files.length === 0) return;
  const rows = [['ID', 'NAME', 'SIZE', 'VISIBILITY', 'MODIFIED']];
  for (const f of listing.folders) rows.push([f.folder_id, safeText(f.name) + '/', '-', visibilityCell(f), formatTime(f.updated_at)]);
  for (const f of listing.files) rows.push([f.file_id, safeText(f.name), formatBytes(f.size), visibilityCell(f), formatTime(f.updated_at)]);
  io.stdout.write(table(rows) + '\n');
}

// mkdir

interface MkdirFlags extends ClientFlags {
  parent?: string;
  private?: boolean;
  parents?: boolean;
  json?: boolean;
}

async function mkdir(name: string, flags: MkdirFlags, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  const visibility = flags.private ? 'Private' : 'Public';
  let parentId = folderArg(flags.parent);
  const names = flags.parents ? name.split('/').filter((n) => n.trim() !== '') : [name];
  if (names.length === 0) throw new CliError('Give the folder a name.');
  let folder: FolderRecord | null = null;
  for (const part of names) {
    try {
      folder = await client.createFolder({ name: part, visibility, parent_id: parentId });
      io.stderr.write(`created folder ${safeText(folder.path)} (${folder.visibility})\n`);
    } catch (err) {
      if (!flags.parents || !isCode(err, 'folder_exists') || typeof err.details.folder_id !== 'string') throw err;
      folder = await client.getFolder(err.details.folder_id);
    }
    parentId = folder.folder_id;
  }
  if (flags.json) json(io, folder);
  else io.stdout.write(`${folder!.folder_id}\n`);
}

// mv, rename, visibility

async function changed(io: Io, flags: { json?: boolean }, result: { kind: 'file' | 'folder'; value: FileRecord | FolderRecord }, what: (item: string) => string): Promise<void> {
  io.stderr.write(`${what(describe(result.kind, result.value))}\n`);
  if (flags.json) json(io, result.value);
}

async function mv(id: string, target: string, flags: ClientFlags & { json?: boolean }, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  const to = folderArg(target);
  const result = await fileOrFolder(id,
    () => client.updateFile({ file_id: id, folder_id: to }),
    () => client.updateFolder({ folder_id: id, parent_id: to }));
  await changed(io, flags, result, (item) => `moved ${item} into ${to === null ? 'the root' : to}`);
}

async function renameCmd(id: string, name: string, flags: ClientFlags & { json?: boolean }, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  const result = await fileOrFolder(id,
    () => client.updateFile({ file_id: id, name }),
    () => client.updateFolder({ folder_id: id, name }));
  await changed(io, flags, result, (item) => `renamed: now ${item}`);
}

async function visibilityCmd(id: string, value: string, flags: ClientFlags & { json?: boolean }, io: Io): Promise<void> {
  const visibility = visibilityArg(value);
  const client = await clientFor(flags, io);
  const result = await fileOrFolder(id,
    () => client.updateFile({ file_id: id, visibility }),
    () => client.updateFolder({ folder_id: id, visibility }));
  await changed(io, flags, result, (item) => `${item} is now ${visibility}`);
}

// rm

async function rmCmd(id: string, flags: ClientFlags & { recursive?: boolean; json?: boolean }, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  let result;
  try {
    result = await fileOrFolder(id,
      () => client.deleteFile(id),
      () => client.deleteFolder({ folder_id: id, recursive: flags.recursive === true }));
  } catch (err) {
    if (isCode(err, 'folder_not_empty')) {
      const files = Number(err.details.files ?? 0);
      const folders = Number(err.details.folders ?? 0);
      throw new CliError(`The folder is not empty (${files} file(s), ${folders} folder(s) directly inside). Run \`coffer rm -r ${id}\` to delete it with everything inside.`);
    }
    throw err;
  }
  if (result.kind === 'file') io.stderr.write(`deleted file ${id}\n`);
  else io.stderr.write(`deleted folder ${id}: ${result.value.deleted_folders} folder(s) and ${result.value.deleted_files} file(s) in all\n`);
  if (flags.json) json(io, result.value);
}

// link

async function link(id: string, flags: ClientFlags & { expiry?: string; download?: boolean; json?: boolean }, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  const expiry = wholeNumber(flags.expiry ?? '3600', '--expiry', 1, 86_400);
  if (flags.download) {
    const result = await client.downloadUrl({ file_id: id, expiry });
    if (flags.json) return json(io, result);
    io.stdout.write(result.download_url + '\n');
    return;
  }
  const file = await client.getFile(id);
  const result = await client.createLink({ file_id: id, file_type: file.file_type, expiry });
  if (flags.json) return json(io, result);
  io.stdout.write(result.presigned_url + '\n');
}

// download

/** Streams a delivery URL from byte `from` into `onChunk`; a refusal is a CliError, a dropped connection a plain error. */
async function fetchInto(url: string, from: number, name: string, onChunk: (chunk: Uint8Array) => Promise<void>): Promise<void> {
  const res = await fetch(url, { headers: from > 0 ? { range: `bytes=${from}-` } : {} });
  if (res.status !== (from > 0 ? 206 : 200)) {
    const text = await res.text().catch(() => '');
    let message = `the delivery network answered ${res.status}`;
    try {
      message = (JSON.parse(text) as { error: { message: string } }).error.message;
    } catch {
      // Not a Coffer error body.
    }
    throw new CliError(`Could not download "${name}": ${message}`);
  }
  if (!res.body) return;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) await onChunk(chunk);
}

/** Waits until the stream takes more, or can take nothing more (closed, failed). */
function drained(out: NodeJS.WritableStream): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      out.off('drain', done);
      out.off('close', done);
      out.off('error', done);
      resolve();
    };
    out.on('drain', done);
    out.on('close', done);
    out.on('error', done);
  });
}

function closeStream(stream: WriteStream): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.once('error', reject);
    stream.end(() => resolve());
  });
}

async function download(id: string, flags: ClientFlags & { output?: string; force?: boolean }, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  const file = await client.getFile(id);
  const shown = safeText(file.name);
  if (file.status !== 'ready') throw new CliError(`"${shown}" is still uploading; it can be downloaded once the upload completes.`);
  const toStdout = flags.output === '-';
  // The stored name is data: it only ever picks a plain name inside the target directory.
  // A path given with -o is the user's own and is taken as it is.
  let named = false;
  let dir = process.cwd();
  if (flags.output && !toStdout) {
    const st = await stat(flags.output).catch(() => null);
    named = !st?.isDirectory();
    dir = flags.output;
  }
  let target: string;
  try {
    target = named ? flags.output! : pathInside(dir, file.name, file.file_id);
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  if (!toStdout && !named && !flags.force && (await stat(target).catch(() => null))) {
    throw new CliError(`${target} already exists: pass --force to replace it, or -o PATH to save elsewhere.`);
  }
  const { download_url: url } = await client.downloadUrl({ file_id: id });

  const progress = new Progress(io.stderr, { live: io.stderr.isTTY === true && !toStdout, verb: 'downloaded' });
  const task = progress.start(file.name, file.size);
  const temp = `${target}.coffer-part-${process.pid}`;
  // 'wx': a file or link already at the temporary name is never written through.
  const out: NodeJS.WritableStream = toStdout ? process.stdout : createWriteStream(temp, { mode: 0o644, flags: 'wx' });
  // A target that cannot be written (no such folder, no permission, a full disk, a closed
  // pipe) is reported as a failure of the command, never as an unhandled stream error.
  let writeError: Error | null = null;
  out.on('error', (err: Error) => {
    writeError ??= err;
  });
  const checkWrite = () => {
    if (writeError) throw new CliError(`Could not write ${toStdout ? 'to standard output' : target}: ${writeError.message}`);
  };
  const hash = createHash('sha256');
  let written = 0;
  const cleanup = () => {
    if (!toStdout) void rm(temp, { force: true });
  };
  const onSignal = () => {
    progress.end();
    // Synchronously: the process exits right after, before an asynchronous removal would run.
    if (!toStdout) rmSync(temp, { force: true });
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  try {
    if (!toStdout) await once(out, 'ready').catch(() => undefined);
    checkWrite();
    // A dropped connection continues where it stopped (Range), up to five attempts in all.
    for (let attempt = 1; ; attempt++) {
      const more = await fetchInto(url, written, shown, async (chunk) => {
        hash.update(chunk);
        written += chunk.length;
        checkWrite();
        if (!out.write(chunk)) await drained(out);
        checkWrite();
        task.update(written);
      }).then(() => null, (err: unknown) => err);
      if (more instanceof CliError) throw more;
      if (more === null && written >= file.size) break;
      if (attempt >= 5) throw new CliError(`The download of "${shown}" kept failing${more ? `: ${(more as Error).message}` : ''}. Try again.`);
      await new Promise((r) => setTimeout(r, 200 * 2 ** attempt));
    }
    if (!toStdout) await closeStream(out as WriteStream).catch(() => undefined);
    checkWrite();
    const sha256 = hash.digest('hex');
    if (written !== file.size || sha256 !== file.sha256) {
      throw new CliError(`The bytes received for "${shown}" do not match its stored SHA-256; nothing was saved. Try again.`);
    }
    if (!toStdout) await rename(temp, target);
    task.done(toStdout ? '' : `to ${safeText(target)}`);
  } catch (err) {
    cleanup();
    throw err;
  } finally {
    progress.end();
    process.off('SIGINT', onSignal);
  }
}

// Registration

const CLIENT_COMMANDS = new Set(['upload', 'ls', 'mkdir', 'mv', 'rename', 'visibility', 'rm', 'link', 'download', 'grant', 'revoke-links']);

/** A word that can only be an id (the service makes 22 base64url characters), not an option. */
const DASH_ID = /^-[A-Za-z0-9_-]{15,}$/;

/**
 * Ids are base64url, so one in 64 begins with "-", and the option parser would take
 * `coffer rm -s6_feJC3ikD4iHykAo6_w` for an unknown option. For a client command, a word
 * of that form that is no option of the command (nor an option's value) is an operand:
 * the arguments are rewritten as OPTIONS -- OPERANDS, in their order.
 */
export function dashIdsAsOperands(program: Command, argv: string[]): string[] {
  const cmd = program.commands.find((c) => c.name() === argv[2]);
  const rest = argv.slice(3);
  if (!cmd || !CLIENT_COMMANDS.has(cmd.name()) || !rest.some((a) => DASH_ID.test(a))) return argv;
  const options: string[] = [];
  const operands: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === '--') {
      operands.push(...rest.slice(i + 1));
      break;
    }
    const name = arg.startsWith('--') && arg.includes('=') ? arg.slice(0, arg.indexOf('=')) : arg;
    const option = cmd.options.find((o) => o.short === name || o.long === name);
    if (option) {
      options.push(arg);
      if (option.required && name === arg && i + 1 < rest.length) options.push(rest[++i]!);
    } else if (DASH_ID.test(arg) || !arg.startsWith('-') || arg === '-') {
      operands.push(arg);
    } else {
      options.push(arg); // unknown: the parser reports it
    }
  }
  return [...argv.slice(0, 3), ...options, '--', ...operands];
}

export function clientOptions(cmd: Command): Command {
  return cmd
    .option('--url <url>', "the origin's address [COFFER_URL, default http://127.0.0.1:8080]")
    .option('--key <key>', 'the access key [COFFER_ACCESS_KEY; prefer the variable: options show up in process lists]');
}

export const examples = (...lines: string[]) => `\nExample${lines.length > 1 ? 's' : ''}:\n${lines.map((l) => `  ${l}`).join('\n')}\n`;

export function registerClientCommands(program: Command, io: Io = defaultIo()): void {
  clientOptions(program.command('upload').description('Upload files; a folder becomes folders, its files go inside.'))
    .argument('<paths...>', 'files and folders to upload')
    .option('--folder <id>', 'the folder to upload into (default: the root)')
    .option('--private', 'make the uploaded files and created folders Private')
    .option('--concurrency <n>', 'parts in flight at once (default 4)')
    .option('--json', 'print the uploaded file records as JSON')
    .option('--compat', 'send parts as base64 in JSON bodies, as every Coffer server takes them (default: raw bytes; a server without raw parts gets JSON anyway)')
    .addHelpText('after', examples(
      'coffer upload photo.jpg',
      'coffer upload ./site --folder 3kTQ0q2BWbcD9yqfXh4r1A --private',
      'coffer upload *.mp4 --concurrency 8 --json > uploaded.json',
      'coffer upload big.iso --compat',
    ) + '\nEach file prints one line: ID, URL, path (tab-separated). An interrupted upload resumes when run again.\n'
      + 'Parts go as raw bytes (a third fewer than base64); a server that answers 415 to them gets JSON from then on.\n')
    .action((paths: string[], flags: UploadFlags) => upload(paths, flags, io));

  clientOptions(program.command('ls').description('List a folder: its folders, then its files.'))
    .argument('[folder]', 'the folder id (default: the root)')
    .option('--sort <field>', 'name, created_at, updated_at or size (default name)')
    .option('--order <order>', 'asc or desc (default asc)')
    .option('--json', 'print the listing as JSON')
    .addHelpText('after', examples('coffer ls', 'coffer ls 3kTQ0q2BWbcD9yqfXh4r1A --sort size --order desc', 'coffer ls --json'))
    .action((folder: string | undefined, flags: ListFlags) => ls(folder, flags, io));

  clientOptions(program.command('mkdir').description('Create a folder; prints its id.'))
    .argument('<name>', 'the folder name (with -p, a path such as photos/2026)')
    .option('--parent <id>', 'the folder to create it in (default: the root)')
    .option('--private', 'make it Private: everything inside needs a signed link')
    .option('-p, --parents', 'create missing folders along a/b/c and reuse existing ones')
    .option('--json', 'print the folder record as JSON')
    .addHelpText('after', examples('coffer mkdir photos', 'coffer mkdir 2026 --parent 3kTQ0q2BWbcD9yqfXh4r1A --private', 'coffer mkdir -p photos/2026/summer'))
    .action((name: string, flags: MkdirFlags) => mkdir(name, flags, io));

  clientOptions(program.command('mv').description('Move a file or folder into another folder.'))
    .argument('<id>', 'the file or folder to move')
    .argument('<folder>', 'the folder to move it into; "root" for the root')
    .option('--json', 'print the updated record as JSON')
    .addHelpText('after', examples('coffer mv 7Yp1c0aT9Qm2xLr5Hk3VwA 3kTQ0q2BWbcD9yqfXh4r1A', 'coffer mv 7Yp1c0aT9Qm2xLr5Hk3VwA root'))
    .action((id: string, folder: string, flags: ClientFlags & { json?: boolean }) => mv(id, folder, flags, io));

  clientOptions(program.command('rename').description('Rename a file or folder; its URLs and links keep working.'))
    .argument('<id>', 'the file or folder')
    .argument('<name>', 'the new name')
    .option('--json', 'print the updated record as JSON')
    .addHelpText('after', examples('coffer rename 7Yp1c0aT9Qm2xLr5Hk3VwA "holiday 2026.jpg"'))
    .action((id: string, name: string, flags: ClientFlags & { json?: boolean }) => renameCmd(id, name, flags, io));

  clientOptions(program.command('visibility').description('Make a file or folder Public or Private, at every edge before it returns.'))
    .argument('<id>', 'the file or folder')
    .argument('<visibility>', 'public or private')
    .option('--json', 'print the updated record as JSON')
    .addHelpText('after', examples('coffer visibility 7Yp1c0aT9Qm2xLr5Hk3VwA private', 'coffer visibility 3kTQ0q2BWbcD9yqfXh4r1A public'))
    .action((id: string, value: string, flags: ClientFlags & { json?: boolean }) => visibilityCmd(id, value, flags, io));

  clientOptions(program.command('rm').description('Delete a file, or a folder (-r: with everything inside), from storage and every edge.'))
    .argument('<id>', 'the file or folder')
    .option('-r, --recursive', 'delete a folder that is not empty, with everything inside')
    .option('--json', 'print the result as JSON')
    .addHelpText('after', examples('coffer rm 7Yp1c0aT9Qm2xLr5Hk3VwA', 'coffer rm -r 3kTQ0q2BWbcD9yqfXh4r1A'))
    .action((id: string, flags: ClientFlags & { recursive?: boolean; json?: boolean }) => rmCmd(id, flags, io));

  clientOptions(program.command('link').description('Print a signed, time-limited link to a file.'))
    .argument('<id>', 'the file')
    .option('--expiry <seconds>', 'how long the link works: 1–86400 (default 3600)')
    .option('--download', 'a link that makes browsers save the file under its name')
    .option('--json', 'print the full answer as JSON')
    .addHelpText('after', examples('coffer link 7Yp1c0aT9Qm2xLr5Hk3VwA --expiry 900', 'curl -o photo.jpg "$(coffer link 7Yp1c0aT9Qm2xLr5Hk3VwA)"'))
    .action((id: string, flags: ClientFlags & { expiry?: string; download?: boolean; json?: boolean }) => link(id, flags, io));

  clientOptions(program.command('download').description('Save a file from the delivery network, checking its SHA-256.'))
    .argument('<id>', 'the file')
    .option('-o, --output <path>', 'where to save it: a file, a folder, or - for standard output (default: ./NAME)')
    .option('-f, --force', 'replace ./NAME when it exists')
    .addHelpText('after', examples('coffer download 7Yp1c0aT9Qm2xLr5Hk3VwA', 'coffer download 7Yp1c0aT9Qm2xLr5Hk3VwA -o ~/Downloads/', 'coffer download 7Yp1c0aT9Qm2xLr5Hk3VwA -o - | tar -xz'))
    .action((id: string, flags: ClientFlags & { output?: string; force?: boolean }) => download(id, flags, io));
}
