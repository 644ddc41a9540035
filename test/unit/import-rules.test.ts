/**
 * The layers of docs/architecture.md ("Import rules"), enforced: each directory under src/ may
 * import only the layers listed for it. A new import across layers fails here until the table
 * (and the architecture page) says it is meant.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, test } from 'vitest';

const SRC = resolve(import.meta.dirname, '../../src');

/** Layer → the layers it may import (itself always). */
const ALLOWED: Record<string, readonly string[]> = {
  core: [],
  config: ['core'],
  metrics: ['core'],
  adapters: ['core'],
  service: ['core'],
  feed: ['core', 'service'],
  http: ['core'],
  origin: ['core', 'service', 'feed', 'http', 'metrics'],
  s3: ['core', 'service', 'http'],
  edge: ['core', 'config', 'metrics'],
  sdk: ['core'],
  start: ['core', 'config', 'adapters', 'service', 'feed', 'http', 'metrics', 'origin', 's3'],
  cli: ['core', 'config', 'sdk', 'edge', 'start'],
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

const layerOf = (path: string): string => relative(SRC, path).split(sep)[0]!;

/** Relative specifiers of static imports, re-exports and dynamic imports (comments left out). */
function importsOf(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found = [...code.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm)];
  return found.map((m) => m[1]!);
}

const files = sourceFiles(SRC);
const edges = files.flatMap((file) =>
  importsOf(readFileSync(file, 'utf8')).map((spec) => ({ file: relative(SRC, file), from: layerOf(file), to: layerOf(resolve(dirname(file), spec)) })),
);

describe('import rules', () => {
  test('every directory under src/ is a layer of the table', () => {
    const layers = readdirSync(SRC).filter((name) => statSync(join(SRC, name)).isDirectory());
    expect(layers.sort()).toEqual(Object.keys(ALLOWED).sort());
  });

  test('the scan sees the imports it judges', () => {
    expect(edges.length).toBeGreaterThan(500);
    expect(edges.some((e) => e.from === 'origin' && e.to === 'service')).toBe(true);
  });

  test('each layer imports only the layers it may', () => {
    const broken = edges.filter((e) => e.from !== e.to && !ALLOWED[e.from]?.includes(e.to)).map((e) => `${e.file} → ${e.to}/`);
    expect(broken).toEqual([]);
  });

  test("docs/architecture.md's table is this one", () => {
    const page = readFileSync(resolve(SRC, '../docs/architecture.md'), 'utf8');
    const section = page.slice(page.indexOf('## Import rules'));
    const rows = [...section.matchAll(/^\| `(\w+)`\s*\|([^|\n]*)\|$/gm)];
    const documented = Object.fromEntries(rows.map((r) => [r[1]!, [...r[2]!.matchAll(/`(\w+)`/g)].map((m) => m[1]!)]));
    expect(documented).toEqual(ALLOWED);
  });

  test('the service does not branch on the SQL dialect: what differs is a capability of the port', () => {
    const branching = files.filter((f) => layerOf(f) === 'service' && /\.dialect\b/.test(readFileSync(f, 'utf8')));
    expect(branching.map((f) => relative(SRC, f))).toEqual([]);
  });

  test('the origin and the S3 interface do not import each other', () => {
    expect(edges.filter((e) => (e.from === 'origin' && e.to === 's3') || (e.from === 's3' && e.to === 'origin'))).toEqual([]);
  });
});
