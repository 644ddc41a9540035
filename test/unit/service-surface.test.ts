/**
 * The service keeps its ports to itself (docs/architecture.md): nothing public on CofferService,
 * nor on its aggregates, is a MetadataStore, a BlobStore or a transaction, or hands one out. The
 * types are checked by `npm run typecheck` (this file is in tsconfig.check.json); the objects
 * the service is made with are looked for at run time too.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import type { BlobStore, MetadataStore, MetadataTx } from '../../src/core/ports.js';
import { openBlobStore, openMetadataStore } from '../../src/adapters/open.js';
import { CofferService } from '../../src/service/service.js';

type Port = MetadataStore | BlobStore | MetadataTx;

/** `true` (or `boolean`) when a value of type V is a port, or a function of it hands one out, awaited or not. */
type Exposes<V> = V extends (...args: never[]) => infer R ? IsPort<Awaited<R>> : IsPort<V>;
type IsPort<V> = V extends Port ? true : false;

/** The public members of T that expose a port (private members are not in `keyof`). */
type PortsAt<T> = { [K in keyof T]-?: true extends Exposes<T[K]> ? K : never }[keyof T];

/** The same one level down, as "member.field": the aggregates' public fields. */
type PortsBelow<T> = {
  [K in keyof T]-?: T[K] extends (...args: never[]) => unknown ? never : NonNullable<T[K]> extends object ? `${K & string}.${PortsAt<NonNullable<T[K]>> & string}` : never;
}[keyof T];

describe("CofferService's public surface", () => {
  it('reaches no port, neither at the top nor in its aggregates (checked by the type checker)', () => {
    expectTypeOf<PortsAt<CofferService>>().toEqualTypeOf<never>();
    expectTypeOf<PortsBelow<CofferService>>().toEqualTypeOf<never>();
    // The check finds what it looks for: a field, a method handing one out, a field of a field.
    expectTypeOf<PortsAt<{ meta: MetadataStore; size: number }>>().toEqualTypeOf<'meta'>();
    expectTypeOf<PortsAt<{ store(): Promise<BlobStore>; name(): string }>>().toEqualTypeOf<'store'>();
    expectTypeOf<PortsBelow<{ files: { tx?: MetadataTx; count: number }; n: number }>>().toEqualTypeOf<'files.tx'>();
    expectTypeOf<PortsBelow<{ files: { count: number } }>>().toEqualTypeOf<never>();
  });

  describe('at run time', () => {
    let dir: string;
    let meta: MetadataStore;
    let blobs: BlobStore;
    let service: CofferService;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'coffer-surface-'));
      meta = await openMetadataStore(dir, undefined);
      blobs = await openBlobStore(dir, undefined);
      service = new CofferService(meta, blobs, { cdnUrl: 'http://cdn.test', signingSecrets: ['s'], uploadTtlSeconds: 3600, maxFileSize: 1 << 20 });
    });
    afterAll(async () => {
      await blobs?.close();
      await meta?.close();
      await rm(dir, { recursive: true, force: true });
    });

    it('holds the stores it was made with in no field of its own nor of its aggregates', () => {
      const stores: unknown[] = [meta, blobs, meta.read];
      const aggregates = Object.values(service).filter((v): v is object => typeof v === 'object' && v !== null);
      expect(aggregates.length).toBeGreaterThan(10);
      for (const value of Object.values(service)) expect(stores).not.toContain(value);
      for (const aggregate of aggregates) {
        for (const value of Object.values(aggregate)) expect(stores).not.toContain(value);
      }
    });
  });
});
