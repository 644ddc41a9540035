/**
 * The client commands of `coffer` (contract §8) run as a user runs them: each is the built
 * CLI (`node dist/cli/main.js …`) in a child process, with only the COFFER_* variables set
 * here, against one real `coffer serve` (origin and edge, SQLite, blob directory) started
 * once for the file. What they print is checked, and what they did is checked at the
 * service: through the SDK at the origin and with plain GETs at the edge.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CofferClient, type FileRecord, type FolderRecord, type ListResponse } from '../../src/sdk/index.js';
import { CLI, spawnCoffer, type CofferProcess } from '../helpers/processes.js';
import { startOldServer } from '../helpers/old-server.js';
import { cliEnv, cliRunner, collectRun, type CliResult, type CliRunner, type RunOptions } from '../helpers/cli-run.js';
import { sha256 } from '../kit/index.js';

const KEY = 'cli-client-test-key';
const SECRET = 'cli-client-test-secret';
const MiB = 1024 * 1024;
const ID = /^[A-Za-z0-9_-]{16,}$/;
const ESC = /\x1b/;

let root: string;
let service: CofferProcess;
let origin: string;
let edge: string;
let sdk: CofferClient;

// ---------------------------------------------------------------- running the CLI

let cli: CliRunner;
const start = (args: string[], opts: RunOptions = {}) => cli.start(args, opts);
const coffer = (args: string[], opts: RunOptions = {}): Promise<CliResult> => cli.run(args, opts);
/** A run that must succeed; its output is in the message when it does not. */
const ok = (args: string[], opts: RunOptions = {}): Promise<CliResult> => cli.ok(args, opts);

/** A run that must fail with exit code `code` and one message on standard error, `coffer: …`. */
async function fails(args: string[], opts: RunOptions = {}, code = 1): Promise<CliResult> {
  const r = await coffer(args, opts);
  expect(r.code, `coffer ${args.join(' ')}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`).toBe(code);
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines.at(-1), r.stderr).toMatch(/^coffer: \S/);
  expect(r.stderr).not.toMatch(ESC);
  return r;
}

const json = <T = any>(r: CliResult): T => JSON.parse(r.stdout) as T;
const listing = async (folder?: string): Promise<ListResponse> => json<ListResponse>(await ok(['ls', ...(folder ? [folder] : []), '--json']));

// ---------------------------------------------------------------- the service

/** A fresh directory under the test's root. */
async function dir(name: string): Promise<string> {
  const d = join(root, name);
  await mkdir(d, { recursive: true });
  return d;
}

async function edgeGet(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Buffer; headers: Headers }> {
  const res = await fetch(url, { headers });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}

/** Uploads through the SDK: setup for the commands that act on existing files. */
const put = (name: string, bytes: Uint8Array, opts: { folderId?: string | null; visibility?: 'Public' | 'Private' } = {}): Promise<FileRecord> =>
  sdk.uploadFile(bytes, { name, folderId: opts.folderId ?? null, visibility: opts.visibility ?? 'Public' });

const folder = (name: string, opts: { parent?: string | null; visibility?: 'Public' | 'Private' } = {}): Promise<FolderRecord> =>
  sdk.createFolder({ name, visibility: opts.visibility ?? 'Public', parent_id: opts.parent ?? null });

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'coffer-cli-client-'));
  service = spawnCoffer({
    name: 'serve', kind: 'edge', args: ['serve'],
    env: { COFFER_PORT: '0', COFFER_EDGE_PORT: '0', COFFER_DATA_DIR: join(root, 'data'), COFFER_ACCESS_KEY: KEY, COFFER_SIGNING_SECRET: SECRET },
  });
  edge = await service.ready;
  origin = /origin listening on (http:\/\/\S+)/.exec(service.stdout())![1]!;
  sdk = new CofferClient({ url: origin, accessKey: KEY });
  cli = cliRunner({ url: origin, key: KEY, root });
});

afterAll(async () => {
  await service?.stop('SIGTERM');
  if (root) await rm(root, { recursive: true, force: true });
});

// ---------------------------------------------------------------- upload

describe('coffer upload', () => {
  it('uploads a 13 MiB file: one ID/URL/PATH line on stdout, the bytes at the edge, the stored SHA-256, plain progress on stderr', async () => {
    const work = await dir('u1');
    const bytes = randomBytes(13 * MiB);
    await writeFile(join(work, 'big13.bin'), bytes);

    const r = await ok(['upload', 'big13.bin'], { cwd: work });
    const lines = r.stdout.split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toBe('');
    const [id, url, path, ...rest] = lines[0]!.split('\t');
    expect(rest).toEqual([]);
    expect(id).toMatch(ID);
    expect(url).toBe(`${edge}/files/${id}`);
    expect(path).toBe('big13.bin');

    const got = await edgeGet(url!);
    expect(got.status).toBe(200);
    expect(got.body.length).toBe(bytes.length);
    expect(got.body.equals(bytes)).toBe(true);

    const record = (await listing()).files.find((f) => f.file_id === id)!;
    expect(record).toMatchObject({ name: 'big13.bin', size: 13 * MiB, status: 'ready', visibility: 'Public', folder_id: null });
    expect(record.sha256).toBe(sha256(bytes));

    // Standard error is not a terminal here: plain lines, no bars, no escapes.
    expect(r.stderr).toContain(`uploaded big13.bin (13.0 MiB) ${id}\n`);
    expect(r.stderr).not.toMatch(ESC);
    expect(r.stderr).not.toMatch(/[█░]/);
  });

  it('uploads a directory tree with --private --json: folders mirror the tree, files land inside; run again, it reuses the folders', async () => {
    const work = await dir('u2');
    const files: Record<string, Buffer> = {
      'site/index.html': Buffer.from('<h1>hello</h1>\n'),
      'site/notes.txt': Buffer.from('notes\n'),
      'site/css/style.css': Buffer.from('body { color: red }\n'),
      'site/img/logo.png': randomBytes(3000),
      'site/img/icons/a.svg': Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'),
    };
    for (const [p, b] of Object.entries(files)) {
      await mkdir(join(work, p, '..'), { recursive: true });
      await writeFile(join(work, p), b);
    }
    await mkdir(join(work, 'site', 'empty'));

    const r = await ok(['upload', 'site', '--private', '--json'], { cwd: work });
    const records = json<Array<FileRecord & { path: string }>>(r);
    expect(Array.isArray(records)).toBe(true);
    expect(records.map((x) => x.path).sort()).toEqual(Object.keys(files).sort());
    // Printed in the order of the walk (names sorted, depth first), not in finishing order.
    expect(records.map((x) => x.path)).toEqual(['site/css/style.css', 'site/img/icons/a.svg', 'site/img/logo.png', 'site/index.html', 'site/notes.txt']);
    const byPath = Object.fromEntries(records.map((x) => [x.path, x]));
    for (const [p, b] of Object.entries(files)) {
      const rec = byPath[p]!;
      expect(rec.file_id).toMatch(ID);
      expect(rec).toMatchObject({ name: p.split('/').at(-1), status: 'ready', visibility: 'Private', size: b.length, sha256: sha256(b) });
    }
    for (const f of ['/site', '/site/css', '/site/empty', '/site/img', '/site/img/icons']) expect(r.stderr).toContain(`created folder ${f} (Private)\n`);

    // The folders, as the service lists them.
    const site = (await listing()).folders.find((f) => f.name === 'site')!;
    expect(site).toMatchObject({ visibility: 'Private', parent_id: null, path: '/site' });
    const top = await listing(site.folder_id);
    expect(top.folder!.folder_id).toBe(site.folder_id);
    expect(top.folders.map((f) => f.name)).toEqual(['css', 'empty', 'img']);
    for (const f of top.folders) expect(f.visibility).toBe('Private');
    expect(top.files.map((f) => f.name)).toEqual(['index.html', 'notes.txt']);
    expect(top.files.map((f) => f.file_id)).toEqual([byPath['site/index.html']!.file_id, byPath['site/notes.txt']!.file_id]);
    const id = (name: string) => top.folders.find((f) => f.name === name)!.folder_id;
    const [css, empty, img] = await Promise.all([listing(id('css')), listing(id('empty')), listing(id('img'))]);
    expect(css.files.map((f) => f.file_id)).toEqual([byPath['site/css/style.css']!.file_id]);
    expect(empty.folders).toEqual([]);
    expect(empty.files).toEqual([]);
    expect(img.folders.map((f) => [f.name, f.visibility])).toEqual([['icons', 'Private']]);
    expect(img.files.map((f) => f.file_id)).toEqual([byPath['site/img/logo.png']!.file_id]);
    const icons = await listing(img.folders[0]!.folder_id);
    expect(icons.breadcrumbs.map((b) => b.name)).toEqual(['site', 'img', 'icons']);
    expect(icons.files.map((f) => f.file_id)).toEqual([byPath['site/img/icons/a.svg']!.file_id]);

    // Private: the unsigned delivery URL is refused.
    expect((await edgeGet(byPath['site/img/logo.png']!.delivery_url!)).status).toBe(403);

    // The same command again: no error, no new folder; the files are uploaded again, as new
    // files beside the first ones (file names may repeat; a file is its id).
    const again = await ok(['upload', 'site', '--private'], { cwd: work });
    expect(again.stderr).not.toContain('created folder');
    const lines = again.stdout.trimEnd().split('\n').map((l) => l.split('\t'));
    expect(lines.map((l) => l[2]).sort()).toEqual(Object.keys(files).sort());
    for (const [fileId] of lines) expect(Object.values(byPath).map((x) => x.file_id)).not.toContain(fileId);
    const top2 = await listing(site.folder_id);
    expect(top2.folders.map((f) => f.folder_id)).toEqual(top.folders.map((f) => f.folder_id));
    expect(top2.files.map((f) => f.name)).toEqual(['index.html', 'index.html', 'notes.txt', 'notes.txt']);
    expect((await listing()).folders.filter((f) => f.name === 'site')).toHaveLength(1);
  });

  it('uploads into --folder, with --concurrency 1; refuses --concurrency 0 and a missing path before uploading anything', async () => {
    const work = await dir('u3');
    await writeFile(join(work, 'a.txt'), 'aaa');
    await writeFile(join(work, 'b.bin'), randomBytes(6 * MiB));
    const target = await folder('u3-target');

    const [good, zero, missing, mixed] = await Promise.all([
      ok(['upload', 'a.txt', 'b.bin', '--folder', target.folder_id, '--concurrency', '1'], { cwd: work }),
      fails(['upload', 'a.txt', '--concurrency', '0'], { cwd: work }),
      fails(['upload', 'nope/missing.bin'], { cwd: work }),
      fails(['upload', 'a.txt', 'gone.txt'], { cwd: work }),
    ]);
    const uploaded = good.stdout.trimEnd().split('\n').map((l) => l.split('\t'));
    expect(uploaded.map((l) => l[2]).sort()).toEqual(['a.txt', 'b.bin']);
    const inside = await listing(target.folder_id);
    expect(inside.files.map((f) => f.file_id).sort()).toEqual(uploaded.map((l) => l[0]).sort());
    expect(inside.files.find((f) => f.name === 'b.bin')!.size).toBe(6 * MiB);

    expect(zero.stderr).toBe('coffer: --concurrency must be a whole number from 1 to 64.\n');
    expect(zero.stdout).toBe('');
    expect(missing.stderr).toBe('coffer: nope/missing.bin: no such file or folder.\n');
    expect(missing.stdout).toBe('');
    // A path that does not exist fails the whole command before any file is sent.
    expect(mixed.stderr).toBe('coffer: gone.txt: no such file or folder.\n');
    expect(mixed.stdout).toBe('');
    expect((await listing()).files.filter((f) => f.name === 'a.txt')).toEqual([]);
  });

  it('reports a file that fails (an unknown --folder) with the service\'s message and a non-zero exit', async () => {
    const work = await dir('u3b');
    await writeFile(join(work, 'c.txt'), 'c');
    const r = await fails(['upload', 'c.txt', '--folder', 'no-such-folder'], { cwd: work });
    expect(r.stderr).toContain('failed c.txt: No folder has the id "no-such-folder".');
    expect(r.stderr).toMatch(/coffer: 1 of 1 file\(s\) failed to upload; none was uploaded\.\n$/);
    const j = await fails(['upload', 'c.txt', '--folder', 'no-such-folder', '--json'], { cwd: work });
    expect(json(j)).toEqual([{ path: 'c.txt', error: { code: 'folder_not_found', message: 'No folder has the id "no-such-folder".', details: { field: 'folder_id', folder_id: 'no-such-folder' } } }]);
  });
});

// ---------------------------------------------------------------- ls, mkdir

describe('coffer ls', () => {
  it('lists the root and a folder as a table, as JSON, and sorted by size', async () => {
    const top = await folder('ls-dir');
    const [sub, priv] = await Promise.all([folder('sub', { parent: top.folder_id }), folder('priv', { parent: top.folder_id, visibility: 'Private' })]);
    const [small, large, mid] = await Promise.all([
      put('small.txt', randomBytes(10), { folderId: top.folder_id }),
      put('large.bin', randomBytes(300_000), { folderId: top.folder_id }),
      put('mid.bin', randomBytes(2000), { folderId: top.folder_id, visibility: 'Private' }),
    ]);
    const hidden = await put('inside.txt', randomBytes(5), { folderId: priv.folder_id });

    const [table, rootTable, j, rootJson, bySize, bySizeJson, inPriv, badSort] = await Promise.all([
      ok(['ls', top.folder_id]),
      ok(['ls']),
      ok(['ls', top.folder_id, '--json']),
      ok(['ls', '--json']),
      ok(['ls', top.folder_id, '--sort', 'size', '--order', 'desc']),
      ok(['ls', top.folder_id, '--sort', 'size', '--order', 'desc', '--json']),
      ok(['ls', priv.folder_id]),
      fails(['ls', top.folder_id, '--sort', 'colour']),
    ]);

    const rows = (r: CliResult) => r.stdout.trimEnd().split('\n').map((l) => l.split(/ {2,}/));
    const t = rows(table);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID +NAME +SIZE +VISIBILITY +MODIFIED$/);
    expect(t.slice(1).map((row) => row.slice(0, 4))).toEqual([
      [priv.folder_id, 'priv/', '-', 'Private'],
      [sub.folder_id, 'sub/', '-', 'Public'],
      [large.file_id, 'large.bin', '293.0 KiB', 'Public'],
      [mid.file_id, 'mid.bin', '2.0 KiB', 'Private'],
      [small.file_id, 'small.txt', '10 B', 'Public'],
    ]);
    for (const row of t.slice(1)) expect(row[4]).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$/);
    expect(table.stderr).toBe('/ls-dir (Public): 2 folder(s), 3 file(s)\n');
    expect(rows(inPriv).slice(1).map((row) => row.slice(0, 4))).toEqual([[hidden.file_id, 'inside.txt', '5 B', 'Private (inherited)']]);

    expect(rootTable.stdout.split('\n')[0]).toMatch(/^ID +NAME +SIZE +VISIBILITY +MODIFIED$/);
    expect(rows(rootTable)).toContainEqual([top.folder_id, 'ls-dir/', '-', 'Public', expect.stringMatching(/^\d{4}-/)]);
    expect(rootTable.stderr).toMatch(/^\/ \(root\): \d+ folder\(s\), \d+ file\(s\)\n$/);

    const l = json<ListResponse>(j);
    expect(Object.keys(l).sort()).toEqual(['breadcrumbs', 'files', 'folder', 'folders', 'next_cursor']);
    expect(l.folder).toMatchObject({ folder_id: top.folder_id, name: 'ls-dir', path: '/ls-dir' });
    expect(l.breadcrumbs.map((b) => b.folder_id)).toEqual([top.folder_id]);
    expect(l.folders.map((f) => f.folder_id)).toEqual([priv.folder_id, sub.folder_id]);
    expect(l.files.map((f) => f.file_id)).toEqual([large.file_id, mid.file_id, small.file_id]);
    expect(l.files[0]).toMatchObject({ sha256: large.sha256, size: 300_000, status: 'ready' });
    expect(l.next_cursor).toBeNull();
    expect(j.stderr).toBe('');
    const r = json<ListResponse>(rootJson);
    expect(r.folder).toBeNull();
    expect(r.breadcrumbs).toEqual([]);
    expect(r.next_cursor).toBeNull();
    expect(r.folders.map((f) => f.folder_id)).toContain(top.folder_id);

    // Folders first (by name: the service sorts them so under a size sort), then files, largest first.
    const sized = rows(bySize).slice(1).map((row) => row[1]);
    expect(sized.slice(0, 2).sort()).toEqual(['priv/', 'sub/']);
    expect(sized.slice(2)).toEqual(['large.bin', 'mid.bin', 'small.txt']);
    expect(json<ListResponse>(bySizeJson).files.map((f) => f.size)).toEqual([300_000, 2000, 10]);
    // Ascending by size, to be sure the order follows the flag and not the names.
    const asc = json<ListResponse>(await ok(['ls', top.folder_id, '--sort', 'size', '--order', 'asc', '--json']));
    expect(asc.files.map((f) => f.size)).toEqual([10, 2000, 300_000]);
    expect(badSort.stderr).toBe('coffer: --sort must be name, created_at, updated_at or size.\n');
  });

  it('fails on an unknown folder with the service\'s message', async () => {
    const r = await fails(['ls', 'no-such-folder']);
    expect(r.stderr).toBe('coffer: No folder has the id "no-such-folder". (folder_not_found)\n');
  });
});

describe('coffer mkdir', () => {
  it('prints only the id; --parent and --private; -p twice reuses; an existing name without -p fails', async () => {
    const made = await ok(['mkdir', 'mk-top']);
    expect(made.stdout).toMatch(/^[A-Za-z0-9_-]{16,}\n$/);
    const topId = made.stdout.trim();
    expect(made.stderr).toBe('created folder /mk-top (Public)\n');
    expect(await sdk.getFolder(topId)).toMatchObject({ name: 'mk-top', visibility: 'Public', parent_id: null });

    const [child, p1, j] = await Promise.all([
      ok(['mkdir', 'child', '--parent', topId, '--private']),
      ok(['mkdir', '-p', 'mk-a/b/c']),
      ok(['mkdir', 'mk-json', '--json']),
    ]);
    expect(child.stdout).toMatch(/^[A-Za-z0-9_-]{16,}\n$/);
    expect(await sdk.getFolder(child.stdout.trim())).toMatchObject({ name: 'child', visibility: 'Private', parent_id: topId, path: '/mk-top/child' });
    expect(json<FolderRecord>(j)).toMatchObject({ name: 'mk-json', visibility: 'Public', path: '/mk-json', parent_id: null });

    const c = await sdk.getFolder(p1.stdout.trim());
    expect(c).toMatchObject({ name: 'c', path: '/mk-a/b/c' });
    expect(p1.stderr.match(/created folder/g)).toHaveLength(3);
    const [p2, exists, parentMissing] = await Promise.all([
      ok(['mkdir', '-p', 'mk-a/b/c']),
      fails(['mkdir', 'mk-top']),
      fails(['mkdir', 'x', '--parent', 'no-such-folder']),
    ]);
    expect(p2.stdout).toBe(p1.stdout);
    expect(p2.stderr).toBe('');
    expect(exists.stderr).toBe('coffer: A folder named "mk-top" already exists here. (folder_exists)\n');
    expect(exists.stdout).toBe('');
    expect(parentMissing.stderr).toMatch(/^coffer: No folder has the id "no-such-folder"\. \(folder_not_found\)\n$/);
    expect((await listing()).folders.filter((f) => f.name === 'mk-a')).toHaveLength(1);
  });
});

// ---------------------------------------------------------------- link

describe('coffer link', () => {
  it('prints a signed link alone; it serves a Private file; --expiry, --download and --json', async () => {
    const bytes = randomBytes(3000);
    const file = await put('secret.bin', bytes, { visibility: 'Private' });
    const before = Math.floor(Date.now() / 1000);
    const [plain, short, zero, download, j] = await Promise.all([
      ok(['link', file.file_id]),
      ok(['link', file.file_id, '--expiry', '900']),
      fails(['link', file.file_id, '--expiry', '0']),
      ok(['link', file.file_id, '--download']),
      ok(['link', file.file_id, '--json']),
    ]);
    const after = Math.floor(Date.now() / 1000);

    expect(plain.stdout).toMatch(/^http:\/\/\S+\n$/);
    const url = plain.stdout.trim();
    expect(url.startsWith(`${edge}/files/${file.file_id}?`)).toBe(true);
    expect(plain.stderr).toBe('');
    const got = await edgeGet(url);
    expect(got.status).toBe(200);
    expect(got.body.equals(bytes)).toBe(true);
    // A .bin is application/octet-stream: not a type shown inline, so an attachment even without --download.
    expect(got.headers.get('content-disposition')).toMatch(/^attachment/);
    // The unsigned address is refused: the link is what makes it work.
    expect((await edgeGet(file.delivery_url!)).status).toBe(403);

    const expires = Number(new URL(short.stdout.trim()).searchParams.get('X-Expires'));
    expect(expires).toBeGreaterThanOrEqual(before + 900);
    expect(expires).toBeLessThanOrEqual(after + 900 + 1);
    expect((await edgeGet(short.stdout.trim())).status).toBe(200);
    const defaultExpires = Number(new URL(url).searchParams.get('X-Expires'));
    expect(defaultExpires).toBeGreaterThanOrEqual(before + 3600);

    expect(zero.stderr).toBe('coffer: --expiry must be a whole number from 1 to 86400.\n');
    expect(zero.stdout).toBe('');

    expect(download.stdout).toMatch(/^http:\/\/\S+\n$/);
    const saved = await edgeGet(download.stdout.trim());
    expect(saved.status).toBe(200);
    expect(saved.headers.get('content-disposition')).toMatch(/^attachment;.*filename\*=UTF-8''secret\.bin/);
    expect(saved.body.equals(bytes)).toBe(true);

    const answer = json(j);
    expect(Object.keys(answer).sort()).toEqual(['expires_at', 'expiry', 'file_id', 'file_type', 'presigned_url']);
    expect(answer).toMatchObject({ file_id: file.file_id, file_type: file.file_type, expiry: 3600 });
    expect((await edgeGet(answer.presigned_url)).body.equals(bytes)).toBe(true);
  });

  it('fails for an unknown file with the service\'s message', async () => {
    const r = await fails(['link', 'no-such-file']);
    expect(r.stderr).toBe('coffer: No file has the id "no-such-file". (file_not_found)\n');
  });
});

// ---------------------------------------------------------------- rename, mv, visibility

describe('coffer rename, mv, visibility', () => {
  it('renames and moves files and folders; a visibility change takes effect at the edge', async () => {
    const bytes = randomBytes(500);
    const [file, a, b] = await Promise.all([put('r7.txt', bytes), folder('mv-a'), folder('mv-b')]);

    const renamed = await ok(['rename', file.file_id, 'renamed7.txt']);
    expect(renamed.stdout).toBe('');
    expect(renamed.stderr).toBe('renamed: now file renamed7.txt\n');
    expect((await sdk.getFile(file.file_id)).name).toBe('renamed7.txt');
    const [renamedJson, folderRenamed] = await Promise.all([
      ok(['rename', file.file_id, 'r7b.txt', '--json']),
      ok(['rename', a.folder_id, 'mv-a2']),
    ]);
    expect(json<FileRecord>(renamedJson)).toMatchObject({ file_id: file.file_id, name: 'r7b.txt' });
    expect(folderRenamed.stderr).toBe('renamed: now folder /mv-a2\n');
    expect((await sdk.getFolder(a.folder_id)).name).toBe('mv-a2');

    // A file into a folder, a folder into another folder, then both back to the root.
    const moved = await ok(['mv', file.file_id, a.folder_id]);
    expect(moved.stdout).toBe('');
    expect((await sdk.getFile(file.file_id)).folder_id).toBe(a.folder_id);
    const folderMoved = json<FolderRecord>(await ok(['mv', a.folder_id, b.folder_id, '--json']));
    expect(folderMoved).toMatchObject({ folder_id: a.folder_id, parent_id: b.folder_id, path: '/mv-b/mv-a2' });
    expect((await listing(b.folder_id)).folders.map((f) => f.folder_id)).toEqual([a.folder_id]);
    const cycle = await fails(['mv', b.folder_id, a.folder_id]);
    expect(cycle.stderr).toMatch(/^coffer: A folder cannot be moved into itself.*\(cycle\)\n$/);
    const [folderBack, fileBack] = await Promise.all([ok(['mv', a.folder_id, 'root']), ok(['mv', file.file_id, 'root', '--json'])]);
    expect(folderBack.stderr).toBe('moved folder /mv-a2 into the root\n');
    expect(json<FileRecord>(fileBack)).toMatchObject({ file_id: file.file_id, folder_id: null });
    expect((await sdk.getFolder(a.folder_id)).parent_id).toBeNull();

    // The delivery URL keeps working through all of it; Private refuses it, Public serves it again.
    expect((await edgeGet(file.delivery_url!)).body.equals(bytes)).toBe(true);
    const priv = await ok(['visibility', file.file_id, 'private']);
    expect(priv.stdout).toBe('');
    expect(priv.stderr).toBe('file r7b.txt is now Private\n');
    const refused = await edgeGet(file.delivery_url!);
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body.toString()).error.code).toBe('signature_required');
    const pub = json<FileRecord>(await ok(['visibility', file.file_id, 'PUBLIC', '--json']));
    expect(pub).toMatchObject({ file_id: file.file_id, visibility: 'Public', effective_visibility: 'Public' });
    const served = await edgeGet(file.delivery_url!);
    expect(served.status).toBe(200);
    expect(served.body.equals(bytes)).toBe(true);

    // A folder's visibility reaches the files inside it.
    await ok(['mv', file.file_id, b.folder_id]);
    const folderPriv = json<FolderRecord>(await ok(['visibility', b.folder_id, 'private', '--json']));
    expect(folderPriv).toMatchObject({ folder_id: b.folder_id, visibility: 'Private' });
    expect((await edgeGet(file.delivery_url!)).status).toBe(403);
    await ok(['visibility', b.folder_id, 'public']);
    expect((await edgeGet(file.delivery_url!)).status).toBe(200);

    const [badValue, unknown, unknownMv] = await Promise.all([
      fails(['visibility', file.file_id, 'secret']),
      fails(['rename', 'no-such-id', 'x']),
      fails(['mv', 'no-such-id', 'root']),
    ]);
    expect(badValue.stderr).toBe('coffer: Visibility must be "public" or "private", not "secret".\n');
    expect(unknown.stderr).toMatch(/^coffer: No file or folder has the id "no-such-id"\./);
    expect(unknownMv.stderr).toMatch(/^coffer: No file or folder has the id "no-such-id"\./);
  });
});

// ---------------------------------------------------------------- rm

describe('coffer rm', () => {
  it('deletes a file (the edge then answers 404), refuses a non-empty folder without -r, deletes it with -r', async () => {
    const box = await folder('rm-box');
    const [file, inside, other] = await Promise.all([
      put('gone.txt', randomBytes(100)),
      put('inside.txt', randomBytes(100), { folderId: box.folder_id }),
      put('json.txt', randomBytes(10)),
    ]);
    expect((await edgeGet(file.delivery_url!)).status).toBe(200);
    expect((await edgeGet(inside.delivery_url!)).status).toBe(200);

    const [removed, notEmpty, unknown, removedJson] = await Promise.all([
      ok(['rm', file.file_id]),
      fails(['rm', box.folder_id]),
      fails(['rm', 'nonexistent']),
      ok(['rm', other.file_id, '--json']),
    ]);
    expect(removed.stdout).toBe('');
    expect(removed.stderr).toBe(`deleted file ${file.file_id}\n`);
    const gone = await edgeGet(file.delivery_url!);
    expect(gone.status).toBe(404);
    expect(JSON.parse(gone.body.toString()).error.code).toBe('not_found');
    expect(json(removedJson)).toEqual({ file_id: other.file_id, deleted: true });

    expect(notEmpty.stderr).toBe(`coffer: The folder is not empty (1 file(s), 0 folder(s) directly inside). Run \`coffer rm -r ${box.folder_id}\` to delete it with everything inside.\n`);
    expect((await sdk.getFolder(box.folder_id)).folder_id).toBe(box.folder_id);
    expect((await edgeGet(inside.delivery_url!)).status).toBe(200);

    expect(unknown.stderr).toBe('coffer: No file or folder has the id "nonexistent". List a folder with `coffer ls` to see the ids.\n');
    // Ids are base64url: one in 64 begins with "-", and is still an id, not an option.
    const [dashRm, dashLink] = await Promise.all([fails(['rm', '-AAAAAAAAAAAAAAAAAAAAAA', '--json']), fails(['link', '-AAAAAAAAAAAAAAAAAAAAAA'])]);
    expect(dashRm.stderr).toMatch(/^coffer: No file or folder has the id "-AAAAAAAAAAAAAAAAAAAAAA"\./);
    expect(dashLink.stderr).toBe('coffer: No file has the id "-AAAAAAAAAAAAAAAAAAAAAA". (file_not_found)\n');

    const recursive = await ok(['rm', '-r', box.folder_id]);
    expect(recursive.stderr).toBe(`deleted folder ${box.folder_id}: 1 folder(s) and 1 file(s) in all\n`);
    await expect(sdk.getFolder(box.folder_id)).rejects.toMatchObject({ code: 'folder_not_found' });
    expect((await edgeGet(inside.delivery_url!)).status).toBe(404);
    // Deleting again: it is gone.
    const again = await fails(['rm', box.folder_id]);
    expect(again.stderr).toMatch(/^coffer: No file or folder has the id/);
  });
});

// ---------------------------------------------------------------- download

describe('coffer download', () => {
  it('saves ./NAME, refuses to overwrite without --force; -o DIR/, -o PATH, -o -', async () => {
    const bytes = randomBytes(200_000);
    const file = await put('dl9.bin', bytes, { visibility: 'Private' });
    const cwd = await dir('dl');

    const first = await ok(['download', file.file_id], { cwd });
    expect(first.stdout).toBe('');
    expect(first.stderr).toMatch(/^downloaded dl9\.bin \(195\.3 KiB\) to \/\S+\/dl\/dl9\.bin\n$/);
    expect((await readFile(join(cwd, 'dl9.bin'))).equals(bytes)).toBe(true);

    const second = await fails(['download', file.file_id], { cwd });
    expect(second.stderr).toContain('already exists');
    expect(second.stderr).toContain('--force');

    await writeFile(join(cwd, 'dl9.bin'), 'stale');
    await mkdir(join(cwd, 'into'));
    const [forced, intoDir, asPath, toStdout, noDir] = await Promise.all([
      ok(['download', file.file_id, '--force'], { cwd }),
      ok(['download', file.file_id, '-o', 'into/'], { cwd }),
      ok(['download', file.file_id, '-o', 'copy.bin'], { cwd }),
      ok(['download', file.file_id, '-o', '-'], { cwd }),
      fails(['download', file.file_id, '-o', 'missing-dir/x.bin'], { cwd }),
    ]);
    expect(forced.code).toBe(0);
    expect((await readFile(join(cwd, 'dl9.bin'))).equals(bytes)).toBe(true);
    expect(intoDir.stderr).toContain('to into/dl9.bin');
    expect((await readFile(join(cwd, 'into', 'dl9.bin'))).equals(bytes)).toBe(true);
    // A name the command chose (inside -o DIR/) is not replaced unasked either.
    const again = await fails(['download', file.file_id, '-o', 'into/'], { cwd });
    expect(again.stderr).toContain('already exists');
    expect(asPath.stdout).toBe('');
    expect((await readFile(join(cwd, 'copy.bin'))).equals(bytes)).toBe(true);
    expect(toStdout.out.equals(bytes)).toBe(true);
    expect(toStdout.stderr).toBe('downloaded dl9.bin (195.3 KiB)\n');
    expect(noDir.stderr).toMatch(/^coffer: Could not write missing-dir\/x\.bin: .*ENOENT/);
    // No partial file is left behind.
    expect((await readdir(cwd)).sort()).toEqual(['copy.bin', 'dl9.bin', 'into']);

    const unknown = await fails(['download', 'no-such-file'], { cwd });
    expect(unknown.stderr).toBe('coffer: No file has the id "no-such-file". (file_not_found)\n');
  });
});

describe('coffer download, interrupted', () => {
  it('exits 130 on SIGINT and leaves no partial file behind', async () => {
    const bytes = randomBytes(30 * MiB);
    const file = await put('interrupted.bin', bytes);
    const cwd = await dir('dl-int');
    const run = start(['download', file.file_id], { cwd });
    // Caught while the bytes arrive: stopped as soon as the partial file exists, then
    // interrupted, then let go (the interrupt is handled before the other 29 MiB are).
    let partial: string | undefined;
    for (let i = 0; i < 5000 && !partial && run.child.exitCode === null; i++) {
      partial = (await readdir(cwd)).find((n) => n.includes('.coffer-part-'));
      if (!partial) await new Promise((r) => setTimeout(r, 1));
    }
    expect(partial, 'the download never wrote its partial file').toBeDefined();
    run.child.kill('SIGSTOP');
    run.child.kill('SIGINT');
    run.child.kill('SIGCONT');
    const r = await run.done;
    expect(r.code, r.stderr).toBe(130);
    expect(await readdir(cwd)).toEqual([]);
  });
});

// ---------------------------------------------------------------- failures, help

describe('failures and help', () => {
  it('a wrong key, no key, an unreachable service, a bad URL, a usage error: exit 1 and a `coffer: ` message', async () => {
    const answer = await fetch(`${origin}/collections/list`, {
      method: 'POST', headers: { authorization: 'Bearer wrong-key', 'content-type': 'application/json' }, body: '{}',
    });
    expect(answer.status).toBe(401);
    const message = ((await answer.json()) as { error: { message: string } }).error.message;

    // A port that was free a moment ago: nothing listens there.
    const closed = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const port = (s.address() as AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    const empty = await dir('no-data');
    const work = await dir('fail-upload');
    await writeFile(join(work, 'f.txt'), 'f');

    const [wrongKey, wrongKeyUpload, noKeyRemote, noKeyLocal, flags, unreachable, badUrl, usage, unknownOption] = await Promise.all([
      fails(['ls'], { env: { COFFER_ACCESS_KEY: 'wrong-key' } }),
      fails(['upload', 'f.txt'], { cwd: work, env: { COFFER_ACCESS_KEY: 'wrong-key' } }),
      fails(['ls'], { env: { COFFER_ACCESS_KEY: undefined, COFFER_URL: 'http://192.0.2.10:8080' } }),
      fails(['ls'], { cwd: empty, env: { COFFER_ACCESS_KEY: undefined } }),
      ok(['ls', '--url', origin, '--key', KEY], { env: { COFFER_ACCESS_KEY: undefined, COFFER_URL: 'http://192.0.2.10:8080' } }),
      fails(['ls'], { env: { COFFER_URL: `http://127.0.0.1:${closed}` } }),
      fails(['ls', '--url', 'ftp://example.com']),
      coffer(['mkdir']),
      coffer(['ls', '--bogus']),
    ]);

    expect(wrongKey.stderr).toBe(`coffer: ${message} (unauthorized)\n`);
    expect(wrongKey.stdout).toBe('');
    expect(wrongKeyUpload.stderr).toMatch(new RegExp(`coffer: ${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(unauthorized\\)\\n$`));
    expect(noKeyRemote.stderr).toBe('coffer: No access key: set COFFER_ACCESS_KEY or pass --key. The service printed it when it first started and keeps it in credentials.json in its data directory.\n');
    expect(noKeyLocal.stderr).toMatch(/^coffer: No access key: set COFFER_ACCESS_KEY or pass --key\..*not found at .*no-data\/data\/credentials\.json/);
    expect(flags.stderr).toMatch(/^\/ \(root\):/);
    expect(unreachable.stderr).toBe(`coffer: Could not reach http://127.0.0.1:${closed}/collections/list (ECONNREFUSED); check the URL and that the service is running.\n`);
    expect(badUrl.stderr).toBe('coffer: "ftp://example.com" is not a service address: give the origin\'s URL, e.g. http://127.0.0.1:8080.\n');
    expect(usage.code).toBe(1);
    expect(usage.stderr).toMatch(/^coffer: missing required argument 'name'\n/);
    expect(unknownOption.code).toBe(1);
    expect(unknownOption.stderr).toMatch(/^coffer: unknown option '--bogus'\n/);
  });

  it('--help of every client command exits 0 with an example', async () => {
    const commands = ['upload', 'sync', 'ls', 'mkdir', 'mv', 'rename', 'visibility', 'rm', 'link', 'download'];
    const results = await Promise.all(commands.map((c) => coffer([c, '--help'])));
    results.forEach((r, i) => {
      expect(r.code, commands[i]).toBe(0);
      expect(r.stdout).toContain(`Usage: coffer ${commands[i]} `);
      expect(r.stdout).toMatch(/\nExamples?:\n {2}\S/);
    });
    const top = await ok(['--help']);
    for (const c of commands) expect(top.stdout).toContain(c);
  });
});

// ---------------------------------------------------------------- resume

/**
 * An HTTP proxy in front of the origin that records the part numbers it forwards and,
 * when told, holds the request for one part without forwarding or answering it: the CLI
 * can be interrupted at a known point, with exactly the parts before it stored.
 */
class PartProxy {
  forwarded: number[] = [];
  /** How each forwarded part went: raw bytes or JSON. */
  encodings: Array<'raw' | 'json'> = [];
  holdPart: number | null = null;
  held!: Promise<number>;
  private onHeld!: (n: number) => void;
  private constructor(private readonly server: http.Server, readonly url: string) {
    this.arm();
  }

  arm(): void {
    this.held = new Promise((r) => (this.onHeld = r));
  }

  static async start(target: string): Promise<PartProxy> {
    let proxy: PartProxy | null = null;
    const server = http.createServer((req, res) => void proxy!.handle(req, res, target));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    proxy = new PartProxy(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return proxy;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse, target: string): Promise<void> {
    const chunks: Buffer[] = [];
    try {
      for await (const c of req) chunks.push(c as Buffer);
    } catch {
      return;
    }
    const body = Buffer.concat(chunks);
    const url = new URL(req.url!, 'http://proxy');
    if (url.pathname === '/collections/upload/file-progress') {
      const inQuery = url.searchParams.get('partNumber');
      const part = Number(inQuery ?? /"partNumber":(\d+)/.exec(body.subarray(0, 4096).toString())?.[1]);
      if (part === this.holdPart) {
        this.onHeld(part);
        return; // never answered: the client gives up when it is interrupted
      }
      this.forwarded.push(part);
      this.encodings.push(inQuery !== null ? 'raw' : 'json');
    }
    try {
      const upstream = await fetch(target + req.url, {
        method: req.method!,
        headers: { authorization: String(req.headers.authorization ?? ''), 'content-type': String(req.headers['content-type'] ?? 'application/json') },
        ...(req.method === 'GET' || req.method === 'HEAD' ? {} : { body }),
      });
      const answer = Buffer.from(await upstream.arrayBuffer());
      res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' });
      res.end(answer);
    } catch {
      res.destroy();
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

describe('coffer upload, interrupted and run again', () => {
  it('exits 130 on SIGINT with the resume message; the same command then sends only the missing parts', async () => {
    const work = await dir('resume');
    const stateHome = await dir('resume-state');
    const stateFile = join(stateHome, 'coffer', 'uploads.json');
    const bytes = randomBytes(30 * MiB); // 6 parts of 5 MiB
    await writeFile(join(work, 'big30.bin'), bytes);
    const proxy = await PartProxy.start(origin);
    try {
      const env = { COFFER_URL: proxy.url, XDG_STATE_HOME: stateHome };
      const args = ['upload', 'big30.bin', '--concurrency', '1'];

      // Parts 1 and 2 reach the service; part 3 is held until the command is interrupted.
      proxy.holdPart = 3;
      const first = start(args, { cwd: work, env });
      await proxy.held;
      // The session was saved for the next run as soon as the upload opened.
      const saved = JSON.parse(await readFile(stateFile, 'utf8')) as Record<string, { session: { fileId: string } }>;
      const entries = Object.values(saved);
      expect(entries).toHaveLength(1);
      const fileId = entries[0]!.session.fileId;
      first.child.kill('SIGINT');
      const interrupted = await first.done;
      expect(interrupted.code, interrupted.stderr).toBe(130);
      expect(interrupted.stdout).toBe('');
      expect(interrupted.stderr).toContain('failed big30.bin: interrupted\n');
      expect(interrupted.stderr).toMatch(/coffer: Interrupted\. Run the same command again to resume: .*\n$/);
      expect(proxy.forwarded).toEqual([1, 2]);

      const status = await sdk.uploadStatus(fileId);
      expect(status).toMatchObject({ status: 'uploading', part_count: 6, received: [1, 2], missing: [3, 4, 5, 6] });
      const received = status.received.length;

      // The same command again: it resumes, and only the missing parts travel.
      proxy.holdPart = null;
      proxy.forwarded = [];
      const again = await ok(args, { cwd: work, env });
      expect(again.stderr).toContain(`resuming big30.bin: ${received} of 6 parts already stored\n`);
      expect(proxy.forwarded).toEqual(status.missing);
      const [id, url] = again.stdout.trim().split('\t');
      expect(id).toBe(fileId);
      const record = await sdk.getFile(fileId);
      expect(record).toMatchObject({ status: 'ready', size: bytes.length });
      expect(record.sha256).toBe(sha256(bytes));
      const got = await edgeGet(url!);
      expect(got.body.equals(bytes)).toBe(true);
      // Done: the state file no longer holds the session.
      expect(JSON.parse(await readFile(stateFile, 'utf8'))).toEqual({});
    } finally {
      await proxy.close();
    }
  });
});

describe('coffer upload: how parts travel (contract §9)', () => {
  it('sends raw parts by default, JSON with --compat, and JSON to a server that answers raw parts 415', async () => {
    const work = await dir('encodings');
    const bytes = randomBytes(2 * 5 * MiB + 99);
    await writeFile(join(work, 'enc.bin'), bytes);
    const proxy = await PartProxy.start(origin);
    try {
      for (const [flags, encoding] of [[[], 'raw'], [['--compat'], 'json']] as const) {
        proxy.encodings = [];
        proxy.forwarded = [];
        const r = await ok(['upload', 'enc.bin', ...flags], { cwd: work, env: { COFFER_URL: proxy.url } });
        expect(proxy.forwarded.sort()).toEqual([1, 2, 3]);
        expect(new Set(proxy.encodings), flags.join(' ')).toEqual(new Set([encoding]));
        expect(await sdk.getFile(r.stdout.split('\t')[0]!)).toMatchObject({ status: 'ready', sha256: sha256(bytes) });
      }
    } finally {
      await proxy.close();
    }
    const old = await startOldServer(origin);
    try {
      const r = await ok(['upload', 'enc.bin', '--concurrency', '1'], { cwd: work, env: { COFFER_URL: old.url } });
      expect(old.refused).toEqual([1]);
      expect(old.forwarded.sort()).toEqual([1, 2, 3]);
      expect(await sdk.getFile(r.stdout.split('\t')[0]!)).toMatchObject({ status: 'ready', sha256: sha256(bytes) });
    } finally {
      await old.close();
    }
    const help = await ok(['upload', '--help']);
    expect(help.stdout).toMatch(/--compat\s+send parts as base64 in JSON/);
  });
});

// ---------------------------------------------------------------- live progress

describe.skipIf(!existsSync('/usr/bin/script') && !existsSync('/bin/script'))('coffer upload on a terminal', () => {
  it('draws live bars with percentages and a Total line for several files', async () => {
    const work = await dir('pty');
    await mkdir(join(work, 'ptyfiles'));
    for (const n of [1, 2, 3]) await writeFile(join(work, 'ptyfiles', `f${n}.bin`), randomBytes(6 * MiB));
    const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const command = [process.execPath, CLI, 'upload', 'ptyfiles', '--concurrency', '1'].map(quote).join(' ');
    // `script` runs the command on a pseudo-terminal: standard error is a TTY there.
    const child = spawn('script', ['-qefc', command, '/dev/null'], { cwd: work, env: cliEnv({ url: origin, key: KEY, root }), stdio: ['ignore', 'pipe', 'pipe'] });
    const r = await collectRun(child);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const screen = r.stdout;
    expect(screen).toMatch(/█/);
    expect(screen).toMatch(/░/);
    expect(screen).toMatch(/ \d{1,3}%/);
    expect(screen).toContain('100%');
    expect(screen).toMatch(/Total \d\/3, /);
    // The bars are redrawn in place: cursor up, erase down.
    expect(screen).toMatch(/\x1b\[\d+F\x1b\[0J/);
    for (const n of [1, 2, 3]) expect(screen).toMatch(new RegExp(`uploaded ptyfiles/f${n}\\.bin \\(6\\.0 MiB\\) [A-Za-z0-9_-]+`));
    expect(screen.match(/\t[^\t\r\n]+\tptyfiles\/f\d\.bin/g)).toHaveLength(3);
    const inside = (await listing()).folders.find((f) => f.name === 'ptyfiles')!;
    expect((await listing(inside.folder_id)).files.map((f) => f.name)).toEqual(['f1.bin', 'f2.bin', 'f3.bin']);
  });
});
