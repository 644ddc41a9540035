/**
 * The README's curl walkthrough runs as written against `coffer serve` (what `npm start`
 * runs), from a directory whose ./data is the service's data dir, as the README says: the
 * ```sh blocks that use `$API` run in order in one bash process with `set -euo pipefail`,
 * the origin's address put in place of http://127.0.0.1:8080. Every answer is on a line of
 * its own, the upload ends ready, the signed link downloads the Private file, and the same
 * address without its signature is refused.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { spawnCoffer, stopAll } from '../helpers/processes.js';

const ROOT = resolve(import.meta.dirname, '../..');
const README_ORIGIN = 'http://127.0.0.1:8080';

/** The README's ```sh blocks that talk to the programmatic interface, in order. */
function walkthrough(markdown: string): string[] {
  const blocks = [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  return blocks.filter((code) => code.includes('$API'));
}

function bash(script: string, cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn('bash', ['-c', `set -euo pipefail\n${script}`], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

let work: string;
let originUrl: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'coffer-readme-'));
  const serve = spawnCoffer({
    name: 'serve', kind: 'edge', args: ['serve'], cwd: work,
    env: { COFFER_PORT: '0', COFFER_EDGE_PORT: '0', COFFER_S3_PORT: '0', COFFER_DATA_DIR: join(work, 'data') },
  });
  await serve.ready;
  originUrl = /origin listening on (http:\/\/\S+)/.exec(serve.stdout())![1]!;
});

afterAll(async () => {
  await stopAll();
  if (work) await rm(work, { recursive: true, force: true });
});

test('the README\'s curl walkthrough uploads a Private file and downloads it through a signed link', async () => {
  const blocks = walkthrough(await readFile(join(ROOT, 'README.md'), 'utf8'));
  expect(blocks.length, 'README.md has ```sh blocks using $API').toBeGreaterThanOrEqual(2);
  const script = blocks.join('\n').replaceAll(README_ORIGIN, originUrl);
  expect(script).not.toContain(README_ORIGIN);

  const r = await bash(script, work);
  expect(r.code, `stderr:\n${r.stderr}\nstdout:\n${r.stdout}`).toBe(0);
  const lines = r.stdout.split('\n');
  expect(lines.at(-1), 'the last answer ends with a newline').toBe('');
  // Three JSON answers, the link, the file's bytes, and the status of the unsigned address.
  const [initiated, part, completed, link, body, unsigned] = lines;
  expect(JSON.parse(initiated!)).toMatchObject({ part_count: 1 });
  expect(JSON.parse(part!)).toMatchObject({ partNumber: 1 });
  expect(JSON.parse(completed!)).toMatchObject({ name: 'hello.txt', visibility: 'Private', status: 'ready' });
  expect(link).toMatch(/\/files\/[\w-]+\?.*X-Sig=/);
  expect(body).toBe('hello');
  expect(unsigned).toBe('403');
  expect(lines).toHaveLength(7);
});
