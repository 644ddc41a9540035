/**
 * One table of error codes (src/core/error-codes.ts): docs/api.md lists each with its status,
 * every code the source makes is in it, and S3 maps each one on purpose.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLIENT_ERROR_CODES, ERROR_CODES, isErrorCode, type ErrorCode } from '../../src/core/error-codes.js';
import { fail } from '../../src/core/errors.js';
import { S3_ERROR_FOR, toS3Error } from '../../src/s3/error-map.js';

const ROOT = join(import.meta.dirname, '../..');
const CODES = Object.keys(ERROR_CODES) as ErrorCode[];

/** The rows of docs/api.md's "Errors" table: code → status. */
function documentedCodes(): Map<string, number> {
  const text = readFileSync(join(ROOT, 'docs/api.md'), 'utf8');
  const section = text.split(/^## Errors$/m)[1]?.split(/^## /m)[0] ?? '';
  const rows = new Map<string, number>();
  for (const m of section.matchAll(/^\| `([a-z0-9_]+)` \| (\d{3}) \|/gm)) rows.set(m[1]!, Number(m[2]));
  return rows;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? sourceFiles(join(dir, d.name)) : d.name.endsWith('.ts') ? [join(dir, d.name)] : []);
}

/** Every way the source names an error code as a literal. */
const CODE_SITES = [
  /(?<![.\w])fail\('([a-z0-9_]+)'/g,
  /\binvalidField\('([a-z0-9_]+)'/g,
  /\bpartError\('([a-z0-9_]+)'/g,
  /\bsendError\(res, '([a-z0-9_]+)'/g,
  /\bnew VariantError\('([a-z0-9_]+)'/g,
  /\brefuse\('([a-z0-9_]+)'/g,
  /\bclientError\('([a-z0-9_]+)'/g,
  /\bnew CofferError\([^,()]+, '([a-z0-9_]+)'/g,
  /\bcode: '([a-z0-9_]+)'/g,
  /\bwholeNumber\([^)]*'([a-z0-9_]+)', '[a-z_]+'\)/g,
  /\bdecodeBase64\([^)]*'([a-z0-9_]+)'\)/g,
];

/** The CLI's JSON results name a failure that was no CofferError (a file it could not read) `error`. */
const NOT_ERROR_CODES = new Set(['error']);

function literalCodes(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of sourceFiles(join(ROOT, 'src'))) {
    const text = readFileSync(file, 'utf8');
    for (const re of CODE_SITES) {
      for (const m of text.matchAll(re)) found.set(m[1]!, [...(found.get(m[1]!) ?? []), relative(ROOT, file)]);
    }
  }
  return found;
}

describe('the table of error codes', () => {
  it('docs/api.md lists every code with its status, and no code the table lacks', () => {
    const documented = documentedCodes();
    const expected = new Map(CODES.map((c) => [c, ERROR_CODES[c].status]));
    expect(documented).toEqual(expected);
  });

  it('holds every error code the source makes', () => {
    const found = literalCodes();
    expect(found.size).toBeGreaterThan(60);
    const unknown = [...found].filter(([code]) => !isErrorCode(code) && !(CLIENT_ERROR_CODES as readonly string[]).includes(code) && !NOT_ERROR_CODES.has(code));
    expect(unknown).toEqual([]);
  });

  it('is the only place a status is chosen: CofferError is built elsewhere only from an answer or a client code', () => {
    const builders = sourceFiles(join(ROOT, 'src')).filter((f) => /new CofferError\(\d/.test(readFileSync(f, 'utf8')));
    expect(builders.map((f) => relative(ROOT, f))).toEqual([]);
  });

  it('gives each code one status the answers use', () => {
    for (const code of CODES) expect(fail(code).status).toBe(ERROR_CODES[code].status);
    // Error bodies are written in three places only, each taking the status from the table:
    // CofferError's own body, the edge's sendError and the answer to a request Node's parser refused.
    const writers = sourceFiles(join(ROOT, 'src')).filter((f) => /JSON\.stringify\(\{ error: \{ code/.test(readFileSync(f, 'utf8')) || /writeHead\([45]\d\d/.test(readFileSync(f, 'utf8')));
    expect(writers.map((f) => relative(ROOT, f)).sort()).toEqual(['src/core/client-error.ts', 'src/edge/answer-headers.ts']);
  });
});

describe("S3's mapping", () => {
  /** Codes answered only by the edges, tus or the HTTP parser, and a failure of the service itself. */
  const INTERNAL = new Set<ErrorCode>([
    'method_not_allowed', 'request_timeout', 'upload_expired', 'unsupported_tus_version', 'unsupported_media_type', 'range_not_satisfiable',
    'image_too_large', 'invalid_image', 'headers_too_large', 'checksum_mismatch', 'internal_error', 'bad_gateway', 'edge_version_mismatch', 'edge_feed_elsewhere', 'edge_loop',
  ]);

  it('names every code of the table', () => {
    expect(Object.keys(S3_ERROR_FOR).sort()).toEqual([...CODES].sort());
  });

  it('keeps the class of each status, and answers InternalError only for codes no S3 operation makes', () => {
    const at = { bucket: 'b', key: 'k', uploadId: 'u' };
    for (const code of CODES) {
      const s3 = toS3Error(fail(code, 'why', { limit: 5, retry_after: 2, part_number: 3 }), at);
      if (INTERNAL.has(code)) {
        expect(s3.code, code).toBe('InternalError');
        continue;
      }
      expect(s3.code, code).not.toBe('InternalError');
      const own = ERROR_CODES[code].status;
      // S3 answers a folder too deep as a bad argument, and every rate limit as 503 SlowDown.
      if (!['folder_too_deep', 'rate_limited', 'variant_limit'].includes(code)) expect(Math.floor(s3.status / 100), code).toBe(Math.floor(own / 100));
    }
  });

  it('maps the codes S3 has a name for to that name', () => {
    const at = { bucket: 'photos', uploadId: 'up1' };
    expect(toS3Error(fail('folder_exists'), at).code).toBe('BucketAlreadyOwnedByYou');
    expect(toS3Error(fail('folder_not_empty'), at).code).toBe('BucketNotEmpty');
    expect(toS3Error(fail('upload_completed'), at).code).toBe('NoSuchUpload');
    expect(toS3Error(fail('invalid_part', 'm', { part_number: 2 }), at).fields).toMatchObject({ PartNumber: 2 });
    expect(toS3Error(fail('rate_limited', 'm', { retry_after: 7 }), at).headers).toEqual({ 'Retry-After': '7' });
    expect(toS3Error(fail('file_not_found'), { bucket: 'photos', key: 'a.txt' }).code).toBe('NoSuchKey');
  });
});
