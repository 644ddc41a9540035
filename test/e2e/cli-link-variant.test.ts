/**
 * `coffer link` signing an image variant (contract §13, §6), served by the edge at the size
 * asked; and a COFFER_URL that names the edge instead of the origin, reported as such.
 */
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { solidImage } from '../helpers/images.js';
import { startCliService, type CliService } from '../helpers/cli-run.js';

let svc: CliService;

beforeAll(async () => {
  svc = await startCliService('cli-link');
});

afterAll(async () => {
  await svc?.close();
});

describe('coffer link with a variant', () => {
  it('signs w, h, fit, format and q: the edge serves that variant, and no other with the same signature', async () => {
    const image = await solidImage('jpeg', 800, 600);
    const file = await svc.sdk.uploadFile(image, { name: 'photo.jpg', visibility: 'Private', contentType: 'image/jpeg' });
    const r = await svc.ok(['link', file.file_id, '--width', '200', '--height', '100', '--fit', 'cover', '--format', 'webp', '--quality', '70']);
    const link = r.stdout.trim();
    expect(link.startsWith(`${svc.edge}/files/${file.file_id}?`)).toBe(true);
    const query = new URL(link).searchParams;
    expect(Object.fromEntries(['w', 'h', 'fit', 'format', 'q'].map((k) => [k, query.get(k)]))).toEqual({ w: '200', h: '100', fit: 'cover', format: 'webp', q: '70' });

    const res = await fetch(link);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/webp');
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    expect({ format: meta.format, width: meta.width, height: meta.height }).toEqual({ format: 'webp', width: 200, height: 100 });

    // The variant is signed: another width under the same signature is refused.
    const other = new URL(link);
    other.searchParams.set('w', '400');
    expect((await fetch(other)).status).toBe(403);

    // Width alone keeps the aspect ratio (fit inside).
    const wide = (await svc.ok(['link', file.file_id, '--width', '400'])).stdout.trim();
    const scaled = await sharp(Buffer.from(await (await fetch(wide)).arrayBuffer())).metadata();
    expect({ width: scaled.width, height: scaled.height }).toEqual({ width: 400, height: 300 });
  });

  it('refuses bad variant values, a variant of a non-image, and --download with a variant', async () => {
    const image = await svc.sdk.uploadFile(await solidImage('png', 10, 10), { name: 'dot.png', visibility: 'Public', contentType: 'image/png' });
    const text = await svc.sdk.uploadFile(new TextEncoder().encode('hello'), { name: 'a.txt', visibility: 'Public' });
    const [zero, fit, notImage, both] = await Promise.all([
      svc.run(['link', image.file_id, '--width', '0']),
      svc.run(['link', image.file_id, '--fit', 'stretch']),
      svc.run(['link', text.file_id, '--width', '100']),
      svc.run(['link', image.file_id, '--width', '100', '--download']),
    ]);
    expect(zero.stderr).toBe('coffer: --width must be a whole number from 1 to 4096.\n');
    expect(fit.stderr).toMatch(/^coffer: "fit" must be one of cover, contain, inside\. \(invalid_variant\)\n$/);
    expect(notImage.stderr).toMatch(/^coffer: .*images only.*\(not_an_image\)\n$/);
    expect(both.stderr).toMatch(/^coffer: --download and the variant options/);
    for (const r of [zero, fit, notImage, both]) expect(r.code).toBe(1);
    const help = await svc.ok(['link', '--help']);
    expect(help.stdout).toMatch(/--width <px>/);
    expect(help.stdout).toMatch(/coffer link \S+ --width 400 --height 300 --fit cover --format webp --quality 80/);
  });
});

describe('COFFER_URL pointing at an edge', () => {
  it('says so, for reading and for uploading commands, with --url too', async () => {
    const said = "points at an edge (the delivery network); give the origin's URL.";
    const [ls, upload, sync, flag] = await Promise.all([
      svc.run(['ls'], { env: { COFFER_URL: svc.edge } }),
      svc.run(['mkdir', 'x'], { env: { COFFER_URL: svc.edge } }),
      svc.run(['sync', svc.root], { env: { COFFER_URL: svc.edge } }),
      svc.run(['ls', '--url', svc.edge]),
    ]);
    for (const r of [ls, upload, sync]) {
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(`coffer: COFFER_URL ${said} (not_an_origin)\n`);
    }
    expect(flag.stderr).toBe(`coffer: --url ${said} (not_an_origin)\n`);
    // The origin itself is not mistaken for an edge.
    await svc.ok(['ls']);
  });
});
