/**
 * `coffer sync DIR [FOLDER]` run as a user runs it (the built CLI against `coffer serve`):
 * a first run mirrors the tree, a second uploads nothing, a changed file of the same size is
 * replaced, `--dry-run` changes nothing, `--delete` removes what is gone, and a run cut off
 * in the middle converges when run again.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FileRecord, FolderRecord } from '../../src/sdk/index.js';
import { startCliService, type CliService } from '../helpers/cli-run.js';
import { sha256 } from '../kit/index.js';

const MiB = 1024 * 1024;

let svc: CliService;

beforeAll(async () => {
  svc = await startCliService('cli-sync');
});

afterAll(async () => {
  await svc?.close();
});

/** Everything under a folder, as `path → record`: files as `a/b.txt`, folders as `a/`. */
async function remoteTree(folderId: string | null, prefix = ''): Promise<Map<string, FileRecord | FolderRecord>> {
  const tree = new Map<string, FileRecord | FolderRecord>();
  for await (const page of svc.sdk.listPages({ folder_id: folderId, limit: 1000 })) {
    for (const f of page.files) tree.set(prefix + f.name, f);
    for (const f of page.folders) {
      tree.set(`${prefix}${f.name}/`, f);
      for (const [k, v] of await remoteTree(f.folder_id, `${prefix}${f.name}/`)) tree.set(k, v);
    }
  }
  return tree;
}

async function folderAt(path: string): Promise<string> {
  let id: string | null = null;
  for (const name of path.split('/').filter(Boolean)) {
    const page = await svc.sdk.list({ folder_id: id, limit: 1000 });
    id = page.folders.find((f) => f.name === name)!.folder_id;
  }
  return id!;
}

async function writeTree(dir: string, files: Record<string, Uint8Array | string>): Promise<void> {
  for (const [rel, bytes] of Object.entries(files)) {
    await mkdir(join(dir, rel, '..'), { recursive: true });
    await writeFile(join(dir, rel), bytes);
  }
}

const fileIds = (tree: Map<string, FileRecord | FolderRecord>) =>
  Object.fromEntries([...tree].filter(([, r]) => 'file_id' in r).map(([p, r]) => [p, (r as FileRecord).file_id]));

describe('coffer sync', () => {
  it('mirrors a tree, skips what matches, replaces a changed file, previews with --dry-run and removes with --delete', async () => {
    const src = join(svc.root, 'site');
    const logo = randomBytes(6 * MiB);
    await writeTree(src, { 'index.html': '<h1>hi</h1>\n', 'css/main.css': 'body{}\n', 'img/logo.png': logo, 'img/old/a.txt': 'old\n' });

    // First run: the path's folders are created, the tree mirrored inside, the summary on stdout.
    const first = await svc.ok(['sync', src, '/mirror/site', '--json']);
    const summary = JSON.parse(first.stdout);
    expect(summary.uploaded.map((u: { path: string }) => u.path).sort()).toEqual(['css/main.css', 'img/logo.png', 'img/old/a.txt', 'index.html']);
    expect(summary).toMatchObject({ dry_run: false, unchanged: [], deleted: [], failed: [] });
    expect(summary.folders_created.sort()).toEqual(['css/', 'img/', 'img/old/']);
    expect(first.stderr).toContain('synced ');
    const root = await folderAt('/mirror/site');
    const tree = await remoteTree(root);
    expect([...tree.keys()].sort()).toEqual(['css/', 'css/main.css', 'img/', 'img/logo.png', 'img/old/', 'img/old/a.txt', 'index.html']);
    expect(tree.get('img/logo.png')).toMatchObject({ size: logo.length, sha256: sha256(logo), status: 'ready' });

    // Run again: nothing to upload, every record kept.
    const again = await svc.ok(['sync', src, root, '--json']);
    const second = JSON.parse(again.stdout);
    expect(second.uploaded).toEqual([]);
    expect(second.unchanged.sort()).toEqual(['css/main.css', 'img/logo.png', 'img/old/a.txt', 'index.html']);
    expect(again.stderr).toMatch(/0 uploaded, 4 unchanged, 0 deleted, 0 folder\(s\) created/);
    expect(fileIds(await remoteTree(root))).toEqual(fileIds(tree));

    // Same size, other bytes: the SHA-256 tells them apart; the old record goes.
    await writeFile(join(src, 'index.html'), '<h1>ho</h1>\n');
    await rm(join(src, 'img', 'old'), { recursive: true });
    await writeFile(join(src, 'new.txt'), 'new\n');
    const before = await remoteTree(root);

    const preview = await svc.ok(['sync', src, root, '--delete', '--dry-run']);
    expect(preview.stdout.split('\n').filter(Boolean).sort()).toEqual(['delete folder img/old/', 'replace index.html', 'upload new.txt']);
    expect(preview.stderr).toMatch(/dry run: 2 to upload, 2 unchanged, 1 to delete/);
    expect(fileIds(await remoteTree(root))).toEqual(fileIds(before));

    const changed = JSON.parse((await svc.ok(['sync', src, root, '--json'])).stdout);
    expect(changed.uploaded.map((u: { path: string }) => u.path).sort()).toEqual(['index.html', 'new.txt']);
    expect(changed.uploaded.find((u: { path: string }) => u.path === 'index.html').replaced).toEqual([(before.get('index.html') as FileRecord).file_id]);
    expect(changed.deleted).toEqual([]);
    const after = await remoteTree(root);
    expect(after.get('index.html')).toMatchObject({ sha256: sha256(Buffer.from('<h1>ho</h1>\n')) });
    expect([...after.keys()].filter((k) => k.startsWith('index.html'))).toEqual(['index.html']);
    // Without --delete, what is gone locally stays.
    expect(after.has('img/old/a.txt')).toBe(true);

    const deleted = JSON.parse((await svc.ok(['sync', src, root, '--delete', '--json'])).stdout);
    expect(deleted.deleted).toEqual([{ path: 'img/old/', kind: 'folder', id: (after.get('img/old/') as FolderRecord).folder_id }]);
    expect(deleted.uploaded).toEqual([]);
    expect([...(await remoteTree(root)).keys()].sort()).toEqual(['css/', 'css/main.css', 'img/', 'img/logo.png', 'index.html', 'new.txt']);
  });

  it('--dry-run into a path that does not exist creates nothing', async () => {
    const src = join(svc.root, 'dry');
    await writeTree(src, { 'a/b.txt': 'b\n' });
    const r = await svc.ok(['sync', src, '/not-yet/here', '--dry-run']);
    expect(r.stdout).toBe('create folder /not-yet/\ncreate folder /not-yet/here/\ncreate folder a/\nupload a/b.txt\n');
    expect((await svc.sdk.list({ folder_id: null })).folders.map((f) => f.name)).not.toContain('not-yet');
  });

  it('refuses a path that is not a directory, with the usual message', async () => {
    await writeFile(join(svc.root, 'plain.txt'), 'x');
    const r = await svc.run(['sync', join(svc.root, 'plain.txt')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^coffer: .*plain\.txt: not a directory/);
  });
});

interface Gate {
  url: string;
  held: Promise<void>;
  /** Lets every later part through. */
  open(): void;
  close(): Promise<void>;
}

/** Passes calls to the origin, but holds every part from the `holdFrom`-th on, unanswered. */
async function partGate(target: string, holdFrom: number): Promise<Gate> {
  let parts = 0;
  let onHeld!: () => void;
  const held = new Promise<void>((r) => (onHeld = r));
  const server = http.createServer((req, res) => {
    if (req.url?.startsWith('/collections/upload/file-progress') && ++parts >= holdFrom) {
      onHeld();
      return;
    }
    const up = http.request(target + req.url, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    held,
    open: () => (holdFrom = Infinity),
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

describe('coffer sync, interrupted', () => {
  it('exits 130 on SIGINT; run again, it skips the finished files, resumes the cut one and converges', async () => {
    const src = join(svc.root, 'big');
    const files = { 'a.bin': randomBytes(6 * MiB), 'b.bin': randomBytes(6 * MiB), 'c.bin': randomBytes(6 * MiB) };
    await writeTree(src, files);
    const target = (await svc.sdk.createFolder({ name: 'big', visibility: 'Private', parent_id: null })).folder_id;
    // Two parts each, one at a time: a.bin's go through, b.bin's second is held.
    const gate = await partGate(svc.origin, 4);
    try {
      const first = svc.start(['sync', src, target, '--concurrency', '1'], { env: { COFFER_URL: gate.url } });
      await gate.held;
      first.child.kill('SIGINT');
      const cut = await first.done;
      expect(cut.code, cut.stderr).toBe(130);
      expect(cut.stderr).toMatch(/coffer: Interrupted\. Run the same command again/);
      const partial = await remoteTree(target);
      expect([...partial].filter(([, r]) => (r as FileRecord).status === 'ready').map(([p]) => p)).toEqual(['a.bin']);
      const aId = (partial.get('a.bin') as FileRecord).file_id;

      // The same command again (the same URL: open uploads are remembered per service address).
      gate.open();
      const again = await svc.ok(['sync', src, target, '--concurrency', '1', '--json'], { env: { COFFER_URL: gate.url } });
      const summary = JSON.parse(again.stdout);
      expect(summary.unchanged).toEqual(['a.bin']);
      expect(summary.uploaded.map((u: { path: string }) => u.path)).toEqual(['b.bin', 'c.bin']);
      expect(again.stderr).toContain('resuming b.bin: 1 of 2 parts already stored');
      expect((await svc.sdk.getFile(aId)).status).toBe('ready');
    } finally {
      await gate.close();
    }
    const tree = await remoteTree(target);
    expect([...tree.keys()].sort()).toEqual(['a.bin', 'b.bin', 'c.bin']);
    for (const [name, bytes] of Object.entries(files)) {
      expect(tree.get(name), name).toMatchObject({ status: 'ready', size: bytes.length, sha256: sha256(bytes), visibility: 'Public' });
    }

    // Converged: a third run has nothing to do.
    expect(JSON.parse((await svc.ok(['sync', src, target, '--json'])).stdout).uploaded).toEqual([]);
  });
});
