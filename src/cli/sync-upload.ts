/**
 * The uploads of a `coffer sync`, several at once with progress on standard error. Each open
 * upload is remembered in the same state file as `coffer upload`'s, so a run cut off by
 * Ctrl-C resumes that file's parts on the next run.
 */
import { resolve } from 'node:path';
import mime from 'mime';
import { CofferError, Limiter, type CofferClient, type FileRecord } from '../sdk/index.js';
import { fileFromPath } from '../sdk/node.js';
import { CliError, type Io } from './common.js';
import { safeText } from './format.js';
import { Progress, type Task } from './progress.js';
import { ResumeStore, defaultStatePath, resumeKey } from './resume-store.js';
import type { UploadStep } from './sync-plan.js';

export interface UploadOutcome {
  step: UploadStep;
  record?: FileRecord;
  error?: unknown;
}

export interface UploadRun {
  outcomes: UploadOutcome[];
  interrupted: boolean;
  /** A failure every file would meet (a wrong key, no service): the run stopped at it. */
  fatal: CofferError | null;
}

interface Context {
  client: CofferClient;
  progress: Progress;
  store: ResumeStore;
  limiter: Limiter;
  concurrency: number;
  signal: AbortSignal;
}

async function uploadOne(ctx: Context, step: UploadStep, task: Task): Promise<FileRecord> {
  const { file } = step;
  const key = resumeKey({ url: ctx.client.url, path: resolve(file.path), size: file.size, mtimeMs: file.mtimeMs, folderId: step.folderId, visibility: step.visibility });
  const resume = await ctx.store.find(key);
  const contentType = mime.getType(file.name) ?? undefined;
  const blob = await fileFromPath(file.path, contentType ? { type: contentType } : {});
  let first = true;
  const record = await ctx.client.uploadFile(blob, {
    name: file.name, folderId: step.folderId, visibility: step.visibility, concurrency: ctx.concurrency, limiter: ctx.limiter,
    signal: ctx.signal,
    ...(contentType ? { contentType } : {}),
    ...(resume ? { resume } : {}),
    onSession: (session) => void ctx.store.save(key, session),
    onProgress: (p) => {
      if (first && p.loaded > 0) ctx.progress.print(`resuming ${safeText(file.rel)}: ${p.partsDone} of ${p.partCount} parts already stored`);
      task.update(p.loaded, { initial: first });
      first = false;
    },
  });
  await ctx.store.remove(key);
  return record;
}

export async function runUploads(client: CofferClient, steps: UploadStep[], opts: { concurrency: number; io: Io }): Promise<UploadRun> {
  const run: UploadRun = { outcomes: [], interrupted: false, fatal: null };
  if (steps.length === 0) return run;
  const stop = new AbortController();
  const progress = new Progress(opts.io.stderr, { live: opts.io.stderr.isTTY === true, verb: 'uploaded', files: steps.length });
  for (const step of steps) progress.expect(step.file.size);
  const ctx: Context = {
    client, progress, store: new ResumeStore(opts.io.env.COFFER_STATE_FILE ?? defaultStatePath(opts.io.env)),
    limiter: new Limiter(opts.concurrency), concurrency: opts.concurrency, signal: stop.signal,
  };
  const onSignal = () => stop.abort(new CliError('Interrupted.', 130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let next = 0;
  const lane = async () => {
    while (next < steps.length && !stop.signal.aborted) {
      const step = steps[next++]!;
      const task = progress.start(step.file.rel, step.file.size);
      try {
        const record = await uploadOne(ctx, step, task);
        task.done(record.file_id);
        run.outcomes.push({ step, record });
      } catch (err) {
        if (stop.signal.aborted && !run.fatal) {
          task.fail('interrupted');
          continue;
        }
        task.fail(err instanceof Error ? err.message : String(err));
        run.outcomes.push({ step, error: err });
        if (err instanceof CofferError && (err.status === 401 || err.status === 0)) {
          run.fatal ??= err;
          stop.abort(err);
        }
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(opts.concurrency, 8, steps.length) }, lane));
  } finally {
    progress.end();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  run.interrupted = stop.signal.aborted && !run.fatal;
  return run;
}
