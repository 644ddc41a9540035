/**
 * Serves the Playground's build (dist/playground: index.html and hashed assets) at the
 * origin's root. A small handler rather than a static-file plugin: every answer, including
 * a missing build or file, keeps the contract's JSON error shape, and the HTML's security
 * headers depend on the delivery address at the time of each request.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import mime from 'mime';
import { errors } from '../core/errors.js';

/** Next to the compiled origin: dist/origin/playground.js → dist/playground, whatever the working directory. */
export const DEFAULT_PLAYGROUND_DIR = fileURLToPath(new URL('../playground/', import.meta.url));

export interface PlaygroundOptions {
  dir: string;
  /** The delivery address now (`coffer serve` may learn it only after start). */
  cdnUrl: () => string;
}

const NOT_BUILT = 'The Playground is not built: run `npm run build`, then reload this page.';
// Hashed names change with their contents, so a browser may keep them for good.
const ASSET_CACHE = 'public, max-age=31536000, immutable';

/** The policy of the Playground's page: only its own scripts, styles and API; media also from the delivery network. */
export function playgroundCsp(cdnUrl: string): string {
  let cdn = '';
  try {
    cdn = ` ${new URL(cdnUrl).origin}`;
  } catch {
    // A delivery address that is no URL adds nothing to trust.
  }
  return [
    "default-src 'self'", "script-src 'self'", "style-src 'self'", `img-src 'self' blob: data:${cdn}`, `media-src 'self'${cdn}`,
    "connect-src 'self'", "worker-src 'self' blob:", "object-src 'none'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
  ].join('; ');
}

function contentType(path: string): string {
  const type = mime.getType(path) ?? 'application/octet-stream';
  const textual = type.startsWith('text/') || type === 'application/json' || type === 'image/svg+xml' || type.endsWith('+json');
  return textual ? `${type}; charset=utf-8` : type;
}

interface FileInfo {
  size: number;
  mtimeMs: number;
  etag: string;
}

/** Whether an If-None-Match header names this ETag (weak comparison, as RFC 9110 asks for it). */
function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}

/**
 * The path below the assets directory a request names, or null when it could name
 * anything outside it (`..`, absolute or hidden parts, back slashes, NUL).
 */
function safeRelative(raw: string): string | null {
  if (raw === '' || raw.includes('\0') || raw.includes('\\')) return null;
  const parts = raw.split('/');
  if (parts.some((p) => p === '' || p.startsWith('.'))) return null;
  return parts.join(sep);
}

export async function registerPlayground(app: FastifyInstance, opts: PlaygroundOptions): Promise<void> {
  const root = resolve(opts.dir);
  const assets = join(root, 'assets');
  // Strong ETags from the bytes, computed once per version of a file.
  const etags = new Map<string, FileInfo>();

  const info = async (path: string): Promise<FileInfo | null> => {
    let st;
    try {
      st = await stat(path);
    } catch {
      return null;
    }
    if (!st.isFile()) return null;
    const known = etags.get(path);
    if (known && known.size === st.size && known.mtimeMs === st.mtimeMs) return known;
    const etag = `"${createHash('sha256').update(await readFile(path)).digest('base64url').slice(0, 27)}"`;
    const fresh = { size: st.size, mtimeMs: st.mtimeMs, etag };
    etags.set(path, fresh);
    return fresh;
  };

  const send = (request: FastifyRequest, reply: FastifyReply, path: string, file: FileInfo) => {
    reply.header('ETag', file.etag).header('Last-Modified', new Date(file.mtimeMs).toUTCString()).header('X-Content-Type-Options', 'nosniff');
    if (matchesEtag(request.headers['if-none-match'], file.etag)) return reply.code(304).send();
    reply.type(contentType(path)).header('Content-Length', String(file.size));
    if (request.method === 'HEAD') return reply.send();
    return reply.send(createReadStream(path));
  };

  const builtOrFail = async (): Promise<void> => {
    if (!(await info(join(root, 'index.html')))) throw errors.unavailable(NOT_BUILT);
  };

  app.route({
    config: { access: 'public' },
    method: ['GET', 'HEAD'],
    url: '/',
    schema: { hide: true },
    handler: async (request, reply) => {
      const index = join(root, 'index.html');
      const file = await info(index);
      if (!file) throw errors.unavailable(NOT_BUILT);
      reply
        .header('Cache-Control', 'no-cache')
        .header('Content-Security-Policy', playgroundCsp(opts.cdnUrl()))
        .header('X-Frame-Options', 'DENY')
        .header('Referrer-Policy', 'no-referrer');
      return send(request, reply, index, file);
    },
  });

  app.route({
    config: { access: 'public' },
    method: ['GET', 'HEAD'],
    url: '/assets/*',
    schema: { hide: true },
    handler: async (request, reply) => {
      await builtOrFail();
      const raw = (request.params as { '*': string })['*'];
      const relative = safeRelative(raw);
      const path = relative === null ? null : join(assets, relative);
      // The join cannot leave the directory after safeRelative; checked again all the same.
      if (path === null || !path.startsWith(assets + sep)) throw errors.notFound(`No Playground asset is at /assets/${raw}.`);
      const file = await info(path);
      if (!file) throw errors.notFound(`No Playground asset is at /assets/${raw}; reload the page to get the current build.`);
      reply.header('Cache-Control', ASSET_CACHE).header('Referrer-Policy', 'no-referrer');
      return send(request, reply, path, file);
    },
  });
}
