/**
 * `coffer sync DIR [FOLDER]`: makes a folder hold what a local directory holds, as
 * `rclone sync` and `mc mirror` do. Unchanged files (same size and SHA-256) are skipped,
 * changed ones uploaded anew and their old records deleted, and with `--delete` what is
 * gone locally is deleted. An interrupted run leaves only finished files behind (and an
 * open upload the next run resumes), so running it again converges.
 */
import { stat } from 'node:fs/promises';
import { CofferError, type CofferClient } from '../sdk/index.js';
import { CliError, clientFor, isCode, json, wholeNumber, type ClientFlags, type Io } from './common.js';
import { safeText } from './format.js';
import { planSync, type SyncPlan, type Visibility } from './sync-plan.js';
import { runUploads, type UploadOutcome } from './sync-upload.js';

export interface SyncFlags extends ClientFlags {
  delete?: boolean;
  dryRun?: boolean;
  private?: boolean;
  concurrency?: string;
  json?: boolean;
}

interface Target {
  /** null: the root; undefined: a path a dry run would create. */
  id: string | null | undefined;
  shown: string;
  /** Folders of the path that did not exist (created, or in a dry run to create). */
  missing: string[];
}

/**
 * FOLDER is an id, `root`/`/`, or a path from the root (`/backups/site`) whose missing
 * folders are created, as rclone creates its destination.
 */
async function resolveTarget(client: CofferClient, value: string | undefined, dryRun: boolean, visibility: Visibility, io: Io): Promise<Target> {
  if (value === undefined || value === 'root' || value.trim() === '/') return { id: null, shown: '/', missing: [] };
  if (!value.startsWith('/')) {
    try {
      return { id: (await client.getFolder(value)).folder_id, shown: value, missing: [] };
    } catch (err) {
      if (isCode(err, 'folder_not_found')) throw new CliError(`No folder has the id "${value}". Give a folder's id, or a path such as /backups/site.`);
      throw err;
    }
  }
  let id: string | null | undefined = null;
  let path = '';
  const missing: string[] = [];
  for (const name of value.split('/').filter((n) => n !== '')) {
    path += `/${name}`;
    let found: string | undefined;
    if (id !== undefined) {
      for await (const page of client.listPages({ folder_id: id, limit: 1000 })) {
        found = page.folders.find((f) => f.name.normalize('NFC') === name.normalize('NFC'))?.folder_id;
        if (found) break;
      }
    }
    if (found === undefined) missing.push(path + '/');
    if (found === undefined && !dryRun) {
      try {
        found = (await client.createFolder({ name, visibility, parent_id: id ?? null })).folder_id;
        io.stderr.write(`created folder ${safeText(path)}\n`);
      } catch (err) {
        if (!isCode(err, 'folder_exists') || typeof err.details.folder_id !== 'string') throw err;
        found = err.details.folder_id;
      }
    }
    id = found;
  }
  return { id, shown: value, missing };
}

interface Summary {
  source: string;
  folder: string;
  dry_run: boolean;
  uploaded: Array<Record<string, unknown>>;
  unchanged: string[];
  deleted: Array<{ path: string; kind: 'file' | 'folder'; id: string }>;
  folders_created: string[];
  failed: Array<{ path: string; error: { code: string; message: string } }>;
}

const errorOf = (err: unknown) => (err instanceof CofferError ? { code: err.code, message: err.message } : { code: 'error', message: err instanceof Error ? err.message : String(err) });

/** A dry run: what would happen, one line each (or the summary's JSON), on standard output. */
function reportPlan(io: Io, target: Target, plan: SyncPlan, summary: Summary, asJson: boolean): void {
  io.stderr.write(`dry run: ${plan.uploads.length} to upload, ${plan.unchanged.length} unchanged, ${plan.deletes.length} to delete, ${target.missing.length + plan.folders.length} folder(s) to create\n`);
  if (asJson) {
    const uploaded = plan.uploads.map((u) => ({ path: u.file.rel, size: u.file.size, replaces: u.replaces.map((r) => r.file_id) }));
    return json(io, { ...summary, uploaded, deleted: plan.deletes.map((d) => ({ path: d.rel, kind: d.kind, id: d.id })) });
  }
  const lines = [
    ...target.missing.map((path) => `create folder ${path}`),
    ...plan.folders.map((rel) => `create folder ${rel}`),
    ...plan.uploads.map((u) => `${u.replaces.length > 0 ? 'replace' : 'upload'} ${u.file.rel}`),
    ...plan.deletes.map((d) => `delete ${d.kind} ${d.rel}`),
  ];
  for (const line of lines) io.stdout.write(safeText(line) + '\n');
}

/** Deletes the records a finished upload replaces; a failure there leaves a duplicate, not a loss. */
async function dropReplaced(client: CofferClient, outcomes: UploadOutcome[], summary: Summary, io: Io): Promise<void> {
  for (const o of outcomes) {
    if (!o.record) continue;
    for (const old of o.step.replaces) {
      await client.deleteFile(old.file_id).catch((err: unknown) => {
        if (isCode(err, 'file_not_found')) return;
        io.stderr.write(`failed to delete the old ${safeText(o.step.file.rel)} (${old.file_id}): ${errorOf(err).message}\n`);
        summary.failed.push({ path: o.step.file.rel, error: errorOf(err) });
      });
    }
  }
}

async function runDeletes(client: CofferClient, plan: SyncPlan, summary: Summary, io: Io): Promise<void> {
  for (const step of plan.deletes) {
    try {
      if (step.kind === 'file') await client.deleteFile(step.id);
      else await client.deleteFolder({ folder_id: step.id, recursive: true });
      io.stderr.write(`deleted ${step.kind} ${safeText(step.rel)}\n`);
      summary.deleted.push({ path: step.rel, kind: step.kind, id: step.id });
    } catch (err) {
      if (isCode(err, 'file_not_found') || isCode(err, 'folder_not_found')) continue;
      io.stderr.write(`failed to delete ${step.kind} ${safeText(step.rel)}: ${errorOf(err).message}\n`);
      summary.failed.push({ path: step.rel, error: errorOf(err) });
    }
  }
}

export async function sync(dir: string, folder: string | undefined, flags: SyncFlags, io: Io): Promise<void> {
  const st = await stat(dir).catch(() => null);
  if (!st?.isDirectory()) throw new CliError(`${dir}: not a directory. \`coffer sync\` mirrors a directory; \`coffer upload\` sends single files.`);
  const concurrency = wholeNumber(flags.concurrency ?? '4', '--concurrency', 1, 64);
  const client = await clientFor(flags, io);
  const visibility: Visibility = flags.private ? 'Private' : 'Public';
  const dryRun = flags.dryRun === true;
  const target = await resolveTarget(client, folder, dryRun, visibility, io);
  const plan = await planSync(dir, target.id, {
    client, delete: flags.delete === true, dryRun, visibility,
    onFolder: (rel) => io.stderr.write(`created folder ${safeText(rel)}\n`),
  });
  for (const rel of plan.skipped) io.stderr.write(`skipped ${safeText(rel)}: not a regular file or folder\n`);
  const summary: Summary = {
    source: dir, folder: target.shown, dry_run: dryRun, uploaded: [], unchanged: plan.unchanged, deleted: [], folders_created: plan.folders, failed: [],
  };
  if (dryRun) return reportPlan(io, target, plan, summary, flags.json === true);

  const run = await runUploads(client, plan.uploads, { concurrency, io });
  for (const o of run.outcomes) {
    if (o.record) summary.uploaded.push({ path: o.step.file.rel, ...o.record, replaced: o.step.replaces.map((r) => r.file_id) });
    else if (o.error !== undefined) summary.failed.push({ path: o.step.file.rel, error: errorOf(o.error) });
  }
  await dropReplaced(client, run.outcomes, summary, io);
  // As rclone does: nothing is deleted after a failure or an interruption, when the local side may be incomplete.
  const deleting = !run.interrupted && summary.failed.length === 0;
  if (deleting) await runDeletes(client, plan, summary, io);
  io.stderr.write(`synced ${dir} to ${target.shown}: ${summary.uploaded.length} uploaded, ${plan.unchanged.length} unchanged, ${summary.deleted.length} deleted, ${plan.folders.length} folder(s) created${summary.failed.length ? `, ${summary.failed.length} failed` : ''}\n`);
  if (flags.json) json(io, summary);
  if (run.fatal) throw run.fatal;
  if (run.interrupted) throw new CliError('Interrupted. Run the same command again: finished files are skipped and an unfinished one resumes.', 130);
  if (summary.failed.length > 0) {
    const kept = !deleting && plan.deletes.length > 0;
    throw new CliError(`${summary.failed.length} item(s) failed${kept ? '; nothing was deleted' : ''}. Run the same command again to retry.`);
  }
}
