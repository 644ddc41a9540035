/**
 * Open uploads the command line may resume: an interrupted `coffer upload` run again on
 * the same unchanged file sends only the parts the service does not have yet.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import type { ResumeHandle } from '../sdk/index.js';

interface Entry {
  session: ResumeHandle;
  saved_at: number;
}

/** Entries older than this are dropped: the service aborts open uploads after a day by default. */
const KEEP_MS = 7 * 24 * 3600 * 1000;

export function defaultStatePath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_STATE_HOME || join(homedir(), '.local', 'state');
  return join(base, 'coffer', 'uploads.json');
}

export interface FileIdentity {
  url: string;
  path: string;
  size: number;
  mtimeMs: number;
  folderId: string | null;
  visibility: string;
}

/** One key per service, file version and destination: a changed file never resumes old parts. */
export const resumeKey = (f: FileIdentity): string =>
  [f.url, f.path, f.size, Math.trunc(f.mtimeMs), f.folderId ?? '', f.visibility.toLowerCase()].join('\n');

export class ResumeStore {
  /** Serializes read-modify-write cycles within this process. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(readonly path: string) {}

  private async read(): Promise<Record<string, Entry>> {
    try {
      const parsed = JSON.parse(await readFile(this.path, 'utf8')) as unknown;
      return parsed && typeof parsed === 'object' ? (parsed as Record<string, Entry>) : {};
    } catch {
      // Missing or unreadable: resuming is a convenience, never a reason to fail.
      return {};
    }
  }

  private async write(entries: Record<string, Entry>): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    const tmp = `${this.path}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify(entries, null, 1) + '\n', { mode: 0o600 });
    await rename(tmp, this.path);
  }

  private change(fn: (entries: Record<string, Entry>) => void): Promise<void> {
    const next = this.queue.then(async () => {
      const entries = await this.read();
      const now = Date.now();
      for (const [k, e] of Object.entries(entries)) if (!(now - e.saved_at < KEEP_MS)) delete entries[k];
      fn(entries);
      await this.write(entries);
    });
    this.queue = next.catch(() => undefined);
    return next.catch(() => undefined);
  }

  async find(key: string): Promise<ResumeHandle | undefined> {
    await this.queue;
    const entry = (await this.read())[key];
    const s = entry?.session;
    return s && typeof s.fileId === 'string' && typeof s.uploadId === 'string' ? s : undefined;
  }

  save(key: string, session: ResumeHandle): Promise<void> {
    return this.change((entries) => {
      entries[key] = { session, saved_at: Date.now() };
    });
  }

  remove(key: string): Promise<void> {
    return this.change((entries) => {
      delete entries[key];
    });
  }
}
