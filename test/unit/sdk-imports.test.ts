/**
 * The browser part of the SDK (`coffer/sdk`, src/sdk/index.ts) must load without Node:
 * walking its runtime import graph (relative imports, `.js` resolved to `.ts`), no module
 * imports a Node builtin, and a bare package is imported for its types only (erased).
 * Type-only imports are erased by the compiler, so the walk does not follow them; their
 * specifiers are still checked for Node builtins.
 */
import { existsSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BUILTINS = new Set(builtinModules.flatMap((m) => [m, m.split('/')[0]!]));

interface ImportRef {
  from: string;
  specifier: string;
  typeOnly: boolean;
}

/** Every static import and re-export of a module, plus dynamic `import()` and `require()`. */
function importsOf(file: string): ImportRef[] {
  const src = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const refs: ImportRef[] = [];
  const from = relative(ROOT, file);
  for (const st of src.statements) {
    if (ts.isImportDeclaration(st) && ts.isStringLiteral(st.moduleSpecifier)) {
      const clause = st.importClause;
      // Erased when marked `import type`, or when every named binding is `type` (and there is
      // no default or namespace binding); `import './x.js'` (no clause) is kept.
      const typeOnly = clause !== undefined && (clause.isTypeOnly || (
        clause.name === undefined && clause.namedBindings !== undefined && ts.isNamedImports(clause.namedBindings)
        && clause.namedBindings.elements.length > 0 && clause.namedBindings.elements.every((e) => e.isTypeOnly)));
      refs.push({ from, specifier: st.moduleSpecifier.text, typeOnly });
    } else if (ts.isExportDeclaration(st) && st.moduleSpecifier && ts.isStringLiteral(st.moduleSpecifier)) {
      const typeOnly = st.isTypeOnly || (st.exportClause !== undefined && ts.isNamedExports(st.exportClause)
        && st.exportClause.elements.length > 0 && st.exportClause.elements.every((e) => e.isTypeOnly));
      refs.push({ from, specifier: st.moduleSpecifier.text, typeOnly });
    } else if (ts.isImportEqualsDeclaration(st) && ts.isExternalModuleReference(st.moduleReference) && ts.isStringLiteral(st.moduleReference.expression)) {
      refs.push({ from, specifier: st.moduleReference.expression.text, typeOnly: st.isTypeOnly });
    }
  }
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && node.arguments.length > 0 && ts.isStringLiteral(node.arguments[0]!)
      && (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))) {
      refs.push({ from, specifier: (node.arguments[0] as ts.StringLiteral).text, typeOnly: false });
    }
    ts.forEachChild(node, visit);
  };
  visit(src);
  return refs;
}

function resolveRelative(fromFile: string, specifier: string): string {
  const target = resolve(dirname(fromFile), specifier);
  for (const candidate of [target.replace(/\.js$/, '.ts'), target, `${target}.ts`, resolve(target, 'index.ts')]) {
    if (existsSync(candidate) && candidate.endsWith('.ts')) return candidate;
  }
  throw new Error(`${relative(ROOT, fromFile)} imports ${specifier}, which resolves to no .ts file`);
}

interface Graph {
  modules: string[];
  refs: ImportRef[];
}

/** The runtime import graph from `entry`: value imports are followed, type-only ones recorded. */
function walk(entry: string): Graph {
  const seen = new Set<string>();
  const refs: ImportRef[] = [];
  const queue = [resolve(ROOT, entry)];
  while (queue.length > 0) {
    const file = queue.shift()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const ref of importsOf(file)) {
      refs.push(ref);
      if (ref.specifier.startsWith('.') && !ref.typeOnly) queue.push(resolveRelative(file, ref.specifier));
    }
  }
  return { modules: [...seen].map((f) => relative(ROOT, f)).sort(), refs };
}

const isNodeBuiltin = (spec: string): boolean => spec.startsWith('node:') || BUILTINS.has(spec) || BUILTINS.has(spec.split('/')[0]!);

/** What the browser rule forbids in a graph. */
function violations(g: Graph): string[] {
  const out: string[] = [];
  for (const r of g.refs) {
    if (isNodeBuiltin(r.specifier)) out.push(`${r.from}: Node builtin "${r.specifier}"`);
    else if (!r.specifier.startsWith('.') && !r.typeOnly) out.push(`${r.from}: value import of package "${r.specifier}"`);
  }
  return out;
}

describe('the browser SDK imports nothing from Node', () => {
  const graph = walk('src/sdk/index.ts');

  it('walks the whole runtime graph of src/sdk/index.ts', () => {
    for (const m of ['src/sdk/index.ts', 'src/sdk/client.ts', 'src/sdk/upload.ts', 'src/sdk/sign.ts', 'src/sdk/base64.ts',
      'src/sdk/retry.ts', 'src/core/errors.ts', 'src/core/signing.ts', 'src/core/upload.ts', 'src/core/file-types.ts']) {
      expect(graph.modules).toContain(m);
    }
    // The Node helpers are a separate entry point, never reached from the browser one.
    expect(graph.modules).not.toContain('src/sdk/node.ts');
    expect(graph.modules).not.toContain('src/core/hmac-node.ts');
  });

  it('has no node: or builtin specifier and no value import of a package', () => {
    expect(violations(graph)).toEqual([]);
  });

  it('the checker does catch violations (the Node entry point and the origin trip it)', () => {
    expect(violations(walk('src/sdk/node.ts'))).toEqual(expect.arrayContaining([
      'src/sdk/node.ts: Node builtin "node:fs"', 'src/sdk/node.ts: Node builtin "node:path"',
    ]));
    expect(violations(walk('src/core/hmac-node.ts'))).toContain('src/core/hmac-node.ts: Node builtin "node:crypto"');
    // origin/app.ts imports fastify as a value; the SDK reaches core/api.ts only through `import type`.
    expect(violations({ modules: [], refs: importsOf(resolve(ROOT, 'src/origin/app.ts')) })).toContain('src/origin/app.ts: value import of package "fastify"');
    expect(graph.refs.some((r) => r.specifier === '../core/api.js' && r.typeOnly)).toBe(true);
  });
});
