/**
 * What `coffer sync` has to do: a local directory compared with a folder, level by level.
 * A file is unchanged when a ready record of the same name has its size and SHA-256; the
 * local file is hashed only when the sizes match, so an unchanged tree costs one read of
 * each file and no upload.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { CofferClient, FileRecord, FolderRecord } from '../sdk/index.js';
import { isCode } from './common.js';

export type Visibility = 'Public' | 'Private';

export interface LocalFile {
  /** Where it is on disk. */
  path: string;
  /** Its path inside the synced directory, with `/`: what messages and the summary show. */
  rel: string;
  name: string;
  size: number;
  mtimeMs: number;
}

export interface UploadStep {
  file: LocalFile;
  folderId: string | null;
  visibility: Visibility;
  /** Older records of the same name, deleted once the new one is ready. */
  replaces: FileRecord[];
}

export interface DeleteStep {
  kind: 'file' | 'folder';
  id: string;
  rel: string;
}

export interface SyncPlan {
  uploads: UploadStep[];
  unchanged: string[];
  deletes: DeleteStep[];
  /** Folders created (or, in a dry run, to create), as `rel/`. */
  folders: string[];
  /** Entries neither file nor folder (sockets, links to folders), left alone. */
  skipped: string[];
}

export interface PlanOptions {
  client: CofferClient;
  /** Remove what is in the folder but not in the directory. */
  delete: boolean;
  /** Compare only: create no folder. */
  dryRun: boolean;
  /** Visibility of the files and folders created; a replaced file keeps its own. */
  visibility: Visibility;
  /** Told about each folder as it is created. */
  onFolder?: (rel: string) => void;
}

interface Remote {
  folders: Map<string, FolderRecord>;
  /** Ready files with a name: what a local file can match or stand in for. */
  files: Map<string, FileRecord[]>;
}

const key = (name: string) => name.normalize('NFC');
const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

async function listRemote(client: CofferClient, folderId: string | null): Promise<Remote> {
  const remote: Remote = { folders: new Map(), files: new Map() };
  for await (const page of client.listPages({ folder_id: folderId, limit: 1000 })) {
    for (const f of page.folders) remote.folders.set(key(f.name), f);
    for (const f of page.files) {
      // Not ready: neither a match nor something to delete. The empty name is the folder's own
      // S3 object (a key ending in "/", docs/s3.md "Keys and folders"): no local file stands for it.
      if (f.status !== 'ready' || f.name === '') continue;
      const same = remote.files.get(key(f.name)) ?? [];
      same.push(f);
      remote.files.set(key(f.name), same);
    }
  }
  return remote;
}

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

async function createFolder(opts: PlanOptions, name: string, parentId: string | null): Promise<string> {
  try {
    return (await opts.client.createFolder({ name, visibility: opts.visibility, parent_id: parentId })).folder_id;
  } catch (err) {
    // Made meanwhile (another run): use it.
    if (isCode(err, 'folder_exists') && typeof err.details.folder_id === 'string') return err.details.folder_id;
    throw err;
  }
}

class Planner {
  readonly plan: SyncPlan = { uploads: [], unchanged: [], deletes: [], folders: [], skipped: [] };

  constructor(private readonly opts: PlanOptions) {}

  /** `folderId` undefined: a folder a dry run would create, so empty. */
  async walk(dir: string, rel: string, folderId: string | null | undefined): Promise<void> {
    const remote = folderId === undefined ? { folders: new Map(), files: new Map() } as Remote : await listRemote(this.opts.client, folderId);
    const entries = (await readdir(dir, { withFileTypes: true })).sort(byName);
    const localFiles = new Set<string>();
    const localDirs = new Set<string>();
    for (const entry of entries) {
      const path = join(dir, entry.name);
      const entryRel = rel + entry.name;
      if (entry.isDirectory()) {
        localDirs.add(key(entry.name));
        await this.walk(path, entryRel + '/', await this.folderFor(entry.name, entryRel + '/', remote, folderId));
        continue;
      }
      // Links to files are followed; links to folders are not, so a loop cannot recur forever.
      const st = await stat(path).catch(() => null);
      if (!st?.isFile()) {
        this.plan.skipped.push(entryRel);
        continue;
      }
      localFiles.add(key(entry.name));
      const file: LocalFile = { path, rel: entryRel, name: entry.name, size: st.size, mtimeMs: st.mtimeMs };
      await this.compare(file, remote.files.get(key(entry.name)) ?? [], folderId ?? null);
    }
    if (this.opts.delete) this.extras(remote, rel, localFiles, localDirs);
  }

  private async folderFor(name: string, rel: string, remote: Remote, parentId: string | null | undefined): Promise<string | null | undefined> {
    const existing = remote.folders.get(key(name));
    if (existing) return existing.folder_id;
    this.plan.folders.push(rel);
    if (this.opts.dryRun || parentId === undefined) return undefined;
    const id = await createFolder(this.opts, name, parentId);
    this.opts.onFolder?.(rel);
    return id;
  }

  private async compare(file: LocalFile, records: FileRecord[], folderId: string | null): Promise<void> {
    const sized = records.filter((r) => r.size === file.size && r.sha256);
    if (sized.length > 0) {
      const sha256 = await sha256File(file.path);
      if (sized.some((r) => r.sha256 === sha256)) {
        this.plan.unchanged.push(file.rel);
        return;
      }
    }
    const visibility = records[0]?.visibility ?? this.opts.visibility;
    this.plan.uploads.push({ file, folderId, visibility, replaces: records });
  }

  private extras(remote: Remote, rel: string, files: Set<string>, dirs: Set<string>): void {
    for (const [name, records] of remote.files) {
      if (files.has(name)) continue;
      for (const r of records) this.plan.deletes.push({ kind: 'file', id: r.file_id, rel: rel + r.name });
    }
    for (const [name, folder] of remote.folders) {
      if (!dirs.has(name)) this.plan.deletes.push({ kind: 'folder', id: folder.folder_id, rel: `${rel}${folder.name}/` });
    }
  }
}

/** Compares `dir` with the folder `folderId` (null: the root; undefined: one still to create). */
export async function planSync(dir: string, folderId: string | null | undefined, opts: PlanOptions): Promise<SyncPlan> {
  const planner = new Planner(opts);
  await planner.walk(dir, '', folderId);
  return planner.plan;
}
