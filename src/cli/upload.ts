/** `coffer upload`: files and folders, several at once, resumable across runs, with progress. */
import { readdir, stat } from 'node:fs/promises';
import { basename, join, relative, resolve } from 'node:path';
import mime from 'mime';
import { CofferError, Limiter, type CofferClient } from '../sdk/index.js';
import { fileFromPath } from '../sdk/node.js';
import { CliError, clientFor, folderArg, isCode, json, wholeNumber, type ClientFlags, type Io } from './common.js';
import { safeText } from './format.js';
import { Progress } from './progress.js';
import { ResumeStore, defaultStatePath, resumeKey } from './resume-store.js';

interface UploadJob {
  path: string;
  name: string;
  size: number;
  mtimeMs: number;
  folderId: string | null;
}

export interface UploadFlags extends ClientFlags {
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

export async function upload(paths: string[], flags: UploadFlags, io: Io): Promise<void> {
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
