/**
 * Migrations of the one-lock round: who made a key, which subtree a webhook belongs to, which
 * key a session was signed in with. Same conventions as migrations.ts.
 */
import type { Migration } from 'kysely';

type Dialect = 'sqlite' | 'postgres';

/** Each entry is added to CofferMigrations in order of its name. */
export function reachMigrations(_dialect: Dialect): Record<string, Migration> {
  return {};
}
