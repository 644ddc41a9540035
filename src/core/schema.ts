/**
 * The few TypeBox builders the API's schemas use, as plain functions that make the same JSON
 * schemas. TypeBox is used for its types only (the builders carry its signatures, so
 * `Static<>` gives the same types, and the SDK's declarations name it); at run time its ES
 * build is some 370 modules, about 3.5 MB of an origin's memory kept for the few hundred
 * objects they build once at start.
 * `test/unit/schema.test.ts` checks every builder against TypeBox itself.
 */
import type { Type as TypeBox } from 'typebox';

type Builders = Pick<typeof TypeBox,
  'String' | 'Integer' | 'Number' | 'Boolean' | 'Null' | 'Unknown' | 'Literal' | 'Array' | 'Union' | 'Intersect' | 'Record' | 'Optional' | 'Object'>;
type Schema = Record<string, unknown>;

/** Copies marked optional by `Optional`; `Object` leaves them out of `required`. */
const optional = new WeakSet<object>();

const builders = {
  String: (options?: Schema) => ({ type: 'string', ...options }),
  Integer: (options?: Schema) => ({ type: 'integer', ...options }),
  Number: (options?: Schema) => ({ type: 'number', ...options }),
  Boolean: (options?: Schema) => ({ type: 'boolean', ...options }),
  Null: (options?: Schema) => ({ type: 'null', ...options }),
  Unknown: (options?: Schema) => ({ ...options }),
  Literal: (value: string | number | boolean, options?: Schema) => ({ type: typeof value, const: value, ...options }),
  Array: (items: Schema, options?: Schema) => ({ type: 'array', items, ...options }),
  Union: (anyOf: Schema[], options?: Schema) => ({ anyOf, ...options }),
  Intersect: (allOf: Schema[], options?: Schema) => ({ allOf, ...options }),
  // Only string keys are used: any property name, each with the value's schema.
  Record: (_key: Schema, value: Schema, options?: Schema) => ({ type: 'object', patternProperties: { '^.*$': value }, ...options }),
  Optional: (schema: Schema) => {
    const copy = { ...schema };
    optional.add(copy);
    return copy;
  },
  Object: (properties: Record<string, Schema>, options?: Schema) => {
    const required = Object.keys(properties).filter((k) => !optional.has(properties[k]!));
    return { type: 'object', ...(required.length > 0 ? { required } : {}), properties, ...options };
  },
};

export const Type = builders as unknown as Builders;
