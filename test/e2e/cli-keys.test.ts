/**
 * The access commands of `coffer` (contract §10): `keys create|ls|revoke`, `grant` and
 * `revoke-links`, each the built CLI in a child process against one real `coffer serve`
 * (origin and edge, SQLite, blob directory). What a key or grant can do afterwards is checked
 * by using it: through the CLI for keys, through the SDK (as a browser would) for grants,
 * and with plain GETs at the edge for links.
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CofferClient, type FolderRecord, type KeyRecord } from '../../src/sdk/index.js';
import { shownRun, startCliService, type CliResult, type CliService } from '../helpers/cli-run.js';
import { sha256 } from '../kit/index.js';

const KEY = /^ck_[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/;
const GRANT = /^cg_[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/;

let service: CliService;
let root: string;
let origin: string;
let edge: string;
let sdk: CofferClient;

/** Runs `coffer ARGS…` with only COFFER_URL and COFFER_ACCESS_KEY (the root key unless `key` is given). */
const coffer = (args: string[], key?: string): Promise<CliResult> => service.run(args, key === undefined ? {} : { key });
const ok = (args: string[], key?: string): Promise<CliResult> => service.ok(args, key === undefined ? {} : { key });

/** A run that must exit 1 with a single `coffer: …` line as the last thing on standard error, nothing on standard output. */
async function fails(args: string[], key?: string): Promise<CliResult> {
  const r = await coffer(args, key);
  expect(r.code, shownRun(args, r)).toBe(1);
  // Its message last; a usage error adds the pointer to --help after it.
  expect(r.stderr, shownRun(args, r)).toMatch(/(^|\n)coffer: \S[^\n]*\n(\(run with --help for usage\)\n)?$/);
  expect(r.stdout, shownRun(args, r)).toBe('');
  return r;
}

const json = <T = any>(r: CliResult): T => JSON.parse(r.stdout) as T;

beforeAll(async () => {
  service = await startCliService('cli-keys');
  ({ root, origin, edge, sdk } = service);
  await writeFile(join(root, 'note.txt'), 'a note\n');
});

afterAll(async () => {
  await service?.close();
});

const folder = (name: string, parent: string | null = null, visibility: 'Public' | 'Private' = 'Public'): Promise<FolderRecord> =>
  sdk.createFolder({ name, visibility, parent_id: parent });

describe('coffer keys create', () => {
  it('prints the key alone on stdout and says on stderr it is not shown again; the key works, confined to its folder', async () => {
    const photos = await folder('photos');
    const y2026 = await folder('2026', photos.folder_id);
    const elsewhere = await folder('elsewhere');

    const made = await ok(['keys', 'create', '--name', 'site', '--scope', 'read,write', '--folder', '/photos']);
    expect(made.stdout).toMatch(new RegExp(`^${KEY.source.slice(1, -1)}\\n$`));
    const key = made.stdout.trim();
    expect(made.stderr).toMatch(/^created key [A-Za-z0-9_-]{22} "site": read, write on folder \/photos and what is inside it; never expires\n/);
    expect(made.stderr).toMatch(/shown only this once/);

    // Inside its folder it reads and writes.
    const inside = await ok(['ls', photos.folder_id, '--json'], key);
    expect(json(inside).folders.map((f: FolderRecord) => f.folder_id)).toEqual([y2026.folder_id]);
    const up = await ok(['upload', 'note.txt', '--folder', y2026.folder_id], key);
    const fileId = up.stdout.split('\t')[0]!;
    expect((await sdk.getFile(fileId)).folder_id).toBe(y2026.folder_id);
    // Outside, everything is as if it did not exist; and it is no admin.
    const outside = await fails(['ls', elsewhere.folder_id], key);
    expect(outside.stderr).toMatch(/\(folder_not_found\)\n$/);
    expect((await fails(['upload', 'note.txt', '--folder', elsewhere.folder_id], key)).stderr).toContain(`failed note.txt: No folder has the id "${elsewhere.folder_id}".`);
    expect((await fails(['keys', 'ls'], key)).stderr).toBe('coffer: This key lacks the "admin" scope. (forbidden)\n');
    expect((await sdk.listKeys()).keys.find((k) => k.name === 'site')).toMatchObject({ scopes: ['read', 'write'], folder_id: photos.folder_id });
  });

  it('--json gives the whole record with the key; --folder takes an id; --expires-in takes 7d; a read key cannot write', async () => {
    const box = await folder('box');
    const r = await ok(['keys', 'create', '--name', 'reader', '--scope', 'read', '--folder', box.folder_id, '--expires-in', '7d', '--json']);
    const record = json(r);
    expect(Object.keys(record).sort()).toEqual(['created_at', 'created_by', 'expires_at', 'folder_id', 'key', 'key_id', 'last_used_at', 'name', 'revoked_at', 'scopes']);
    expect(record).toMatchObject({ name: 'reader', scopes: ['read'], folder_id: box.folder_id, revoked_at: null, last_used_at: null });
    expect(record.key).toMatch(KEY);
    expect(Date.parse(record.expires_at) - Date.parse(record.created_at)).toBe(7 * 86_400 * 1000);
    expect(r.stderr).toMatch(/shown only this once/);

    await ok(['ls', box.folder_id], record.key);
    expect((await fails(['mkdir', 'inner', '--parent', box.folder_id], record.key)).stderr).toBe('coffer: This key lacks the "write" scope. (forbidden)\n');
    // `--scope read --scope write` is the same as `--scope read,write`.
    const both = json(await ok(['keys', 'create', '--name', 'both', '--scope', 'read', '--scope', 'write', '--json']));
    expect(both.scopes).toEqual(['read', 'write']);
  });

  it('refuses what it cannot make, saying what to do', async () => {
    const [noName, noScope, badScope, badExpiry, tooLong, noFolder, noSuchId] = await Promise.all([
      fails(['keys', 'create', '--scope', 'read']),
      fails(['keys', 'create', '--name', 'x']),
      fails(['keys', 'create', '--name', 'x', '--scope', 'read,owner']),
      fails(['keys', 'create', '--name', 'x', '--scope', 'read', '--expires-in', 'soon']),
      fails(['keys', 'create', '--name', 'x', '--scope', 'read', '--expires-in', '20000d']),
      fails(['keys', 'create', '--name', 'x', '--scope', 'read', '--folder', '/no/such']),
      fails(['keys', 'create', '--name', 'x', '--scope', 'read', '--folder', 'NoSuchFolder0000000000']),
    ]);
    expect(noName.stderr).toMatch(/^coffer: required option '--name <name>' not specified\n/);
    expect(noScope.stderr).toMatch(/^coffer: required option '--scope <scopes>' not specified\n/);
    expect(badScope.stderr).toBe('coffer: Unknown scope "owner": --scope takes read, write and admin, comma-separated, e.g. --scope read,write.\n');
    expect(badExpiry.stderr).toBe('coffer: --expires-in must be a number of seconds, or a number with s, m, h or d (e.g. 3600, 15m, 7d), not "soon".\n');
    expect(tooLong.stderr).toMatch(/^coffer: --expires-in must be a whole number from 1 to \d+\. \(invalid_expiry\)\n$/);
    expect(noFolder.stderr).toBe('coffer: No folder at /no/such: / has no folder named "no". Create it with `coffer mkdir -p no/such`, or give the folder\'s id.\n');
    expect(noSuchId.stderr).toBe('coffer: No folder has the id "NoSuchFolder0000000000". (folder_not_found)\n');

    // Only the root key makes admin keys; a key gives only scopes it holds.
    const admin = (await ok(['keys', 'create', '--name', 'admin', '--scope', 'admin,read'])).stdout.trim();
    expect((await fails(['keys', 'create', '--name', 'x', '--scope', 'admin'], admin)).stderr).toBe('coffer: Only the root key makes keys with the "admin" scope. (forbidden)\n');
    expect((await ok(['keys', 'create', '--name', 'made-by-admin', '--scope', 'read'], admin)).stdout.trim()).toMatch(KEY);
    expect((await fails(['keys', 'create', '--name', 'x', '--scope', 'write'], admin)).stderr).toBe('coffer: This key cannot give the "write" scope: it does not hold it. (forbidden)\n');
  });
});

describe('coffer keys ls and revoke', () => {
  it('lists every key in a table (no secrets), shows last use; revoke ends a key at once; ls shows when', async () => {
    const shelf = await folder('shelf');
    const key = (await ok(['keys', 'create', '--name', 'lister', '--scope', 'read', '--folder', '/shelf'])).stdout.trim();
    const keyId = key.slice(3, 25);

    let table = await ok(['keys', 'ls']);
    const header = table.stdout.split('\n')[0]!;
    expect(header.split(/ {2,}/)).toEqual(['ID', 'NAME', 'SCOPES', 'FOLDER', 'CREATED', 'EXPIRES', 'LAST USED', 'REVOKED', 'MADE BY']);
    let row = table.stdout.split('\n').find((l) => l.startsWith(keyId))!;
    expect(row.split(/ {2,}/)).toEqual([keyId, 'lister', 'read', '/shelf', expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d$/), 'never', 'never', '-', 'root']);
    expect(table.stdout).not.toMatch(/ck_/);
    expect(table.stderr).toMatch(/^\d+ key\(s\), \d+ active\. The root key \(COFFER_ACCESS_KEY\) is not listed\.\n$/);

    await ok(['ls', shelf.folder_id], key);
    table = await ok(['keys', 'ls']);
    row = table.stdout.split('\n').find((l) => l.startsWith(keyId))!;
    expect(row.split(/ {2,}/)[6]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d$/);

    const listed = json<{ keys: KeyRecord[] }>(await ok(['keys', 'ls', '--json']));
    expect(listed).toEqual(await sdk.listKeys());
    expect(JSON.stringify(listed)).not.toMatch(/ck_/);

    const revoked = await ok(['keys', 'revoke', keyId]);
    expect(revoked.stdout).toBe('');
    expect(revoked.stderr).toMatch(new RegExp(`^revoked key ${keyId} \\(at .*\\): it no longer works, at any origin\\n$`));
    expect((await fails(['ls', shelf.folder_id], key)).stderr).toBe('coffer: This key was revoked. (unauthorized)\n');
    row = (await ok(['keys', 'ls'])).stdout.split('\n').find((l) => l.startsWith(keyId))!;
    expect(row.split(/ {2,}/)[7]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d$/);
    const again = json(await ok(['keys', 'revoke', keyId, '--json']));
    expect(again).toMatchObject({ key_id: keyId, revoked: true });
  });

  it('an unknown key id, a wrong key, no admin scope: exit 1 with what to do', async () => {
    expect((await fails(['keys', 'revoke', 'NoSuchKey000000000000A'])).stderr).toBe('coffer: No key has the id "NoSuchKey000000000000A". List the keys with `coffer keys ls`.\n');
    expect((await fails(['keys', 'ls'], 'ck_AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')).stderr).toMatch(/\(unauthorized\)\n$/);
    expect((await fails(['keys', 'revoke'])).stderr).toMatch(/^coffer: missing required argument 'key_id'\n/);
    const bare = await coffer(['keys']);
    expect(bare.code).toBe(1);
    expect(bare.stderr).toMatch(/Usage: coffer keys/);
  });
});

describe('coffer grant', () => {
  it('prints the grant alone and its expiry; the SDK uploads with it into the granted folder within its limits', async () => {
    const inbox = await folder('inbox', null, 'Private');
    const before = Date.now();
    const r = await ok(['grant', '--folder', '/inbox', '--visibility', 'private', '--max-size', '2KB', '--type', 'text/*', '--max-files', '2', '--expires-in', '15m']);
    expect(r.stdout).toMatch(new RegExp(`^${GRANT.source.slice(1, -1)}\\n$`));
    const grant = r.stdout.trim();
    expect(r.stderr).toMatch(/^grant for 2 file\(s\) of at most 2\.0 KiB \(2000 bytes\), text\/\*, Private, into \/inbox\n/);
    const iso = /expires \S+ \S+ \(in 15m; (\S+)\)\n$/.exec(r.stderr)![1]!;
    expect(Date.parse(iso)).toBeGreaterThanOrEqual(before + 900_000 - 1000);
    expect(Date.parse(iso)).toBeLessThanOrEqual(Date.now() + 900_000);

    const browser = new CofferClient({ url: origin, grant });
    const bytes = randomBytes(2000);
    const file = await browser.uploadFile(bytes, { name: 'ok.txt', visibility: 'Private', contentType: 'text/plain' });
    expect(file).toMatchObject({ status: 'ready', folder_id: inbox.folder_id, size: 2000, sha256: sha256(bytes) });
    // 2KB is 2000 bytes, not 2048.
    await expect(browser.uploadFile(randomBytes(2001), { name: 'big.txt', visibility: 'Private', contentType: 'text/plain' })).rejects.toMatchObject({ status: 413, code: 'file_too_large' });
    await expect(browser.uploadFile(randomBytes(10), { name: 'x.png', visibility: 'Private', contentType: 'image/png' })).rejects.toMatchObject({ status: 403 });
    await expect(browser.uploadFile(randomBytes(10), { name: 'pub.txt', visibility: 'Public', contentType: 'text/plain' })).rejects.toMatchObject({ status: 403 });
    // The grant uploads and does nothing else.
    await expect(browser.list({ folder_id: inbox.folder_id })).rejects.toMatchObject({ status: 403, code: 'forbidden' });
    // The second of its two files, then no more.
    await browser.uploadFile(randomBytes(5), { name: 'two.txt', visibility: 'Private', contentType: 'text/plain' });
    await expect(browser.uploadFile(randomBytes(5), { name: 'three.txt', visibility: 'Private', contentType: 'text/plain' })).rejects.toMatchObject({ status: 403 });
  });

  it('--json gives {grant, expires_at}; 5MiB is binary; the defaults are one file within the hour', async () => {
    const r = await ok(['grant', '--max-size', '5MiB', '--json']);
    const answer = json(r);
    expect(Object.keys(answer).sort()).toEqual(['expires_at', 'grant']);
    expect(answer.grant).toMatch(GRANT);
    expect(Date.parse(answer.expires_at)).toBeLessThanOrEqual(Date.now() + 3_600_000);
    expect(Date.parse(answer.expires_at)).toBeGreaterThan(Date.now() + 3_500_000);
    expect(r.stderr).toMatch(/^grant for 1 file\(s\) of at most 5\.0 MiB \(5242880 bytes\), any type, Public or Private\n/);

    const browser = new CofferClient({ url: origin, grant: answer.grant });
    await expect(browser.uploadFile(new Uint8Array(5 * 1024 * 1024 + 1), { name: 'over.bin' })).rejects.toMatchObject({ status: 413 });
    const bytes = randomBytes(5 * 1024 * 1024);
    const file = await browser.uploadFile(bytes, { name: 'exact.bin' });
    expect(file).toMatchObject({ status: 'ready', folder_id: null, size: bytes.length, sha256: sha256(bytes) });
  });

  it('refuses wrong sizes, durations, counts, visibilities and folders, naming the flag', async () => {
    const [noSize, badSize, fraction, tooBig, longLife, zeroFiles, badVisibility, noFolder, badType] = await Promise.all([
      fails(['grant']),
      fails(['grant', '--max-size', '10XB']),
      fails(['grant', '--max-size', '0.1KiB']),
      fails(['grant', '--max-size', '100TB']),
      fails(['grant', '--max-size', '1MB', '--expires-in', '2d']),
      fails(['grant', '--max-size', '1MB', '--max-files', '0']),
      fails(['grant', '--max-size', '1MB', '--visibility', 'secret']),
      fails(['grant', '--max-size', '1MB', '--folder', '/nowhere']),
      fails(['grant', '--max-size', '1MB', '--type', 'not a type']),
    ]);
    expect(noSize.stderr).toMatch(/^coffer: required option '--max-size <size>' not specified\n/);
    expect(badSize.stderr).toBe('coffer: --max-size must be a size such as 1048576, 10MB or 5MiB, not "10XB".\n');
    expect(fraction.stderr).toBe('coffer: --max-size must be a size such as 1048576, 10MB or 5MiB, not "0.1KiB".\n');
    expect(tooBig.stderr).toMatch(/^coffer: --max-size must be a whole number from 0 to \d+\. \(invalid_max_size\)\n$/);
    expect(longLife.stderr).toBe('coffer: --expires-in must be a whole number from 1 to 86400. (invalid_expiry)\n');
    expect(zeroFiles.stderr).toMatch(/^coffer: --max-files must be a whole number from 1 to \d+\. \(invalid_max_files\)\n$/);
    expect(badVisibility.stderr).toBe('coffer: Visibility must be "public" or "private", not "secret".\n');
    expect(noFolder.stderr).toMatch(/^coffer: No folder at \/nowhere: /);
    expect(badType.stderr).toMatch(/^coffer: --type must list media types .*\(invalid_content_type\)\n$/);
  });
});

describe('coffer revoke-links', () => {
  it('every earlier link answers 403 link_revoked at the edge when it returns; a new link works', async () => {
    const bytes = randomBytes(4000);
    const file = await sdk.uploadFile(bytes, { name: 'private.bin', visibility: 'Private' });
    const link = (await ok(['link', file.file_id])).stdout.trim();
    expect((await fetch(link)).status).toBe(200);

    const r = await ok(['revoke-links', file.file_id]);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(new RegExp(`^links to file ${file.file_id} issued until \\S+ now answer 403 at every edge; new links`));
    const old = await fetch(link);
    expect(old.status).toBe(403);
    expect(((await old.json()) as { error: { code: string } }).error.code).toBe('link_revoked');

    const fresh = (await ok(['link', file.file_id])).stdout.trim();
    expect(fresh.startsWith(`${edge}/files/${file.file_id}?`)).toBe(true);
    const got = await fetch(fresh);
    expect(got.status).toBe(200);
    expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true);

    const j = json(await ok(['revoke-links', file.file_id, '--json']));
    expect(Object.keys(j).sort()).toEqual(['file_id', 'links_revoked_at']);
    expect((await fetch(fresh)).status).toBe(403);
  });

  it('an unknown file and a read-only key fail with the service\'s message', async () => {
    expect((await fails(['revoke-links', 'NoSuchFile000000000000'])).stderr).toBe('coffer: No file has the id "NoSuchFile000000000000". (file_not_found)\n');
    const file = await sdk.uploadFile(randomBytes(10), { name: 'r.bin' });
    const reader = (await ok(['keys', 'create', '--name', 'r', '--scope', 'read'])).stdout.trim();
    expect((await fails(['revoke-links', file.file_id], reader)).stderr).toBe('coffer: This key lacks the "write" scope. (forbidden)\n');
    expect((await fails(['revoke-links'])).stderr).toMatch(/^coffer: missing required argument 'file_id'\n/);
  });
});

describe('help', () => {
  it('--help of each access command exits 0 with its usage and examples; the top help names them', async () => {
    const commands = [['keys'], ['keys', 'create'], ['keys', 'ls'], ['keys', 'revoke'], ['grant'], ['revoke-links']];
    const results = await Promise.all(commands.map((c) => coffer([...c, '--help'])));
    results.forEach((r, i) => {
      expect(r.code, commands[i]!.join(' ')).toBe(0);
      expect(r.stdout).toContain(`Usage: coffer ${commands[i]!.join(' ')} `);
      expect(r.stdout).toMatch(/\nExamples?:\n {2}coffer /);
    });
    expect(results[1]!.stdout).toMatch(/--scope <scopes>/);
    expect(results[4]!.stdout).toMatch(/--max-size <size>/);
    const top = await ok(['--help']);
    for (const c of ['keys', 'grant', 'revoke-links']) expect(top.stdout).toContain(c);
  });
});
