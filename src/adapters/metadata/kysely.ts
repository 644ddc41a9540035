/**
 * Kysely's values, from its CommonJS build. Its ES build is some 400 modules, and each
 * module a process loads stays resident; the CommonJS build of the same code costs an
 * origin about 7 MB less (docs/operations.md, "Memory"). Types still come from 'kysely':
 * they are the same declarations. Every module of the metadata store takes Kysely from here,
 * so no value of one build ever meets the other.
 */
import { createRequire } from 'node:module';
import type * as KyselyModule from 'kysely';

const kysely = createRequire(import.meta.url)('kysely') as typeof KyselyModule;

export const { SqliteDialect, PostgresDialect, Migrator, sql } = kysely;
export const Kysely = kysely.Kysely;
export type Kysely<DB> = KyselyModule.Kysely<DB>;
