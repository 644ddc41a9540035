/**
 * src/core/schema.ts builds the API's JSON schemas without loading TypeBox at run time. Every
 * schema the API exports must come out exactly as TypeBox builds it (same keys, same order:
 * the OpenAPI document and the validators are made from them), and each builder must match
 * TypeBox's on the shapes it is given.
 */
import { Type as TypeBox } from 'typebox';
import { describe, expect, it, vi } from 'vitest';
import { Type } from '../../src/core/schema.js';

const API_MODULES = ['../../src/core/api.js', '../../src/core/api-access.js', '../../src/core/api-webhooks.js', '../../src/core/api-usage.js'];

const json = (v: unknown) => JSON.stringify(v);

/** The modules' exported schemas, keyed `module export`. */
async function exportedSchemas(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const path of API_MODULES) {
    const mod = (await import(path)) as Record<string, unknown>;
    for (const [name, value] of Object.entries(mod)) {
      if (value !== null && typeof value === 'object') out.set(`${path} ${name}`, json(value));
    }
  }
  return out;
}

describe('the schema builders', () => {
  it('build every exported API schema exactly as TypeBox does', async () => {
    vi.resetModules();
    const ours = await exportedSchemas();
    vi.resetModules();
    vi.doMock('../../src/core/schema.js', () => ({ Type: TypeBox }));
    const theirs = await exportedSchemas();
    vi.doUnmock('../../src/core/schema.js');
    vi.resetModules();
    expect(ours.size).toBeGreaterThan(40);
    expect([...ours.keys()]).toEqual([...theirs.keys()]);
    for (const [name, schema] of ours) expect(schema, name).toBe(theirs.get(name));
  });

  it('match TypeBox builder by builder', () => {
    const o = { description: 'd' };
    const cases: Array<[string, unknown, unknown]> = [
      ['String', Type.String({ minLength: 1, ...o }), TypeBox.String({ minLength: 1, ...o })],
      ['Integer', Type.Integer({ minimum: 0 }), TypeBox.Integer({ minimum: 0 })],
      ['Number', Type.Number(), TypeBox.Number()],
      ['Boolean', Type.Boolean(o), TypeBox.Boolean(o)],
      ['Null', Type.Null(), TypeBox.Null()],
      ['Unknown', Type.Unknown(o), TypeBox.Unknown(o)],
      ['Literal string', Type.Literal('x', o), TypeBox.Literal('x', o)],
      ['Literal number', Type.Literal(3), TypeBox.Literal(3)],
      ['Literal boolean', Type.Literal(true), TypeBox.Literal(true)],
      ['Array', Type.Array(Type.String(), { maxItems: 2 }), TypeBox.Array(TypeBox.String(), { maxItems: 2 })],
      ['Union', Type.Union([Type.String(), Type.Null()], o), TypeBox.Union([TypeBox.String(), TypeBox.Null()], o)],
      ['Intersect', Type.Intersect([Type.Object({ a: Type.String() }), Type.Object({ b: Type.Number() })]),
        TypeBox.Intersect([TypeBox.Object({ a: TypeBox.String() }), TypeBox.Object({ b: TypeBox.Number() })])],
      ['Record', Type.Record(Type.String(), Type.Unknown()), TypeBox.Record(TypeBox.String(), TypeBox.Unknown())],
      ['Object with optional and options', Type.Object({ a: Type.String(), b: Type.Optional(Type.Integer()) }, { additionalProperties: false }),
        TypeBox.Object({ a: TypeBox.String(), b: TypeBox.Optional(TypeBox.Integer()) }, { additionalProperties: false })],
      ['Object all optional', Type.Object({ a: Type.Optional(Type.String()) }), TypeBox.Object({ a: TypeBox.Optional(TypeBox.String()) })],
      ['empty Object', Type.Object({}), TypeBox.Object({})],
    ];
    for (const [name, ours, theirs] of cases) expect(json(ours), name).toBe(json(theirs));
  });

  it('mark only the copy Optional returns: the same schema stays required elsewhere', () => {
    const shared = Type.String();
    const a = Type.Object({ x: Type.Optional(shared) });
    const b = Type.Object({ x: shared });
    expect(json(a)).toBe(json(TypeBox.Object({ x: TypeBox.Optional(TypeBox.String()) })));
    expect((b as { required?: string[] }).required).toEqual(['x']);
  });
});
