/**
 * The embedded store keeps its prepared statements (src/adapters/metadata/sqlite.ts). Attacked
 * here: rollbacks, nested iteration, schema changes, bind errors, a busy database, a closed one,
 * and the `in` lists whose SQL varies with the data (not kept).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from '../../src/adapters/metadata/better-sqlite3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEPT_MAX_PARAMETERS, keepingStatements, openSqliteStore } from '../../src/adapters/metadata/sqlite.js';

describe('kept prepared statements give the answers fresh ones would', () => {
  const sqlite = new BetterSqlite3(':memory:');
  const db = keepingStatements(sqlite);
  const rows = (sql: string, ...params: unknown[]) => db.prepare(sql).all(...params);
  const run = (sql: string, ...params: unknown[]) => db.prepare(sql).run(...params);
  beforeAll(() => {
    sqlite.exec('create table t (n integer primary key, s text)');
    sqlite.exec("insert into t values (1, 'a'), (2, 'b'), (3, 'c')");
  });
  afterAll(() => sqlite.close());

  it('across transactions rolled back and committed with the same statements', () => {
    for (let i = 0; i < 3; i++) {
      run('begin immediate');
      run('insert into t values (?, ?)', 10 + i, 'x');
      expect(rows('select count(*) as c from t')).toEqual([{ c: 4 }]);
      run('rollback');
      expect(rows('select count(*) as c from t')).toEqual([{ c: 3 }]);
    }
    run('begin immediate');
    run('insert into t values (?, ?)', 20, 'y');
    run('commit');
    expect(rows('select s from t where n = ?', 20)).toEqual([{ s: 'y' }]);
    run('delete from t where n = ?', 20);
  });

  it('the same query nested three deep while each is being iterated', () => {
    const sql = 'select n from t order by n';
    const seen: number[][] = [];
    for (const a of db.prepare(sql).iterate() as Iterable<{ n: number }>) {
      for (const b of db.prepare(sql).iterate() as Iterable<{ n: number }>) {
        const inner = (db.prepare(sql).all() as Array<{ n: number }>).map((r) => r.n);
        seen.push([a.n, b.n, ...inner]);
      }
    }
    expect(seen).toHaveLength(9);
    expect(seen[4]).toEqual([2, 2, 1, 2, 3]);
    // Once the iterations are over the kept one serves again.
    expect(rows(sql)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
  });

  it('an iteration left open does not change what the next callers read', () => {
    const sql = 'select n from t where n >= ? order by n';
    const open = (db.prepare(sql).iterate(2) as IterableIterator<{ n: number }>);
    expect(open.next().value).toEqual({ n: 2 });
    expect(rows(sql, 1)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(rows(sql, 3)).toEqual([{ n: 3 }]);
    expect(open.next().value).toEqual({ n: 3 });
    open.return?.();
    expect(rows(sql, 2)).toEqual([{ n: 2 }, { n: 3 }]);
  });

  it('sees columns added and tables remade after it was prepared', () => {
    run('create table m (a integer)');
    run('insert into m values (1)');
    expect(rows('select * from m')).toEqual([{ a: 1 }]);
    sqlite.exec('alter table m add column b text default \'z\'');
    expect(rows('select * from m')).toEqual([{ a: 1, b: 'z' }]);
    sqlite.exec('drop table m; create table m (c text); insert into m values (\'remade\')');
    expect(rows('select * from m')).toEqual([{ c: 'remade' }]);
    sqlite.exec('drop table m');
    expect(() => rows('select * from m')).toThrow(/no such table/);
  });

  it('a call with the wrong parameters fails alone: the next one with the right ones works', () => {
    const sql = 'select s from t where n = ? and s = ?';
    expect(() => rows(sql, 1)).toThrow(RangeError);
    expect(rows(sql, 1, 'a')).toEqual([{ s: 'a' }]);
    expect(() => run('insert into t values (?, ?)', 1, 'dup')).toThrow(/UNIQUE/);
    expect(rows('select s from t where n = ?', 1)).toEqual([{ s: 'a' }]);
  });

  it('a database busy in another connection: the kept BEGIN fails, then works once it is free', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'coffer-busy-'));
    try {
      const file = join(dir, 'db.sqlite');
      const one = new BetterSqlite3(file);
      one.pragma('journal_mode = WAL');
      one.pragma('busy_timeout = 10');
      one.exec('create table k (v integer)');
      const kept = keepingStatements(one);
      const other = new BetterSqlite3(file);
      other.exec('begin immediate');
      expect(() => kept.prepare('begin immediate').run()).toThrow(/locked|busy/i);
      other.exec('insert into k values (7); commit');
      kept.prepare('begin immediate').run();
      kept.prepare('insert into k values (?)').run(8);
      kept.prepare('commit').run();
      expect(kept.prepare('select v from k order by v').all()).toEqual([{ v: 7 }, { v: 8 }]);
      other.close();
      kept.close();
      // Closed: kept or not, a statement refuses to run; nothing answers from a closed file.
      expect(() => kept.prepare('select v from k order by v').all()).toThrow(/not open/);
      expect(() => kept.prepare('select 1').all()).toThrow(/not open/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('does not keep statements whose SQL varies with the data: in lists of many ids', () => {
    const list = (n: number) => `select n from t where n in (${Array(n).fill('?').join(', ')}) order by n`;
    const small = db.prepare(list(2));
    expect(db.prepare(list(2))).toBe(small);
    const big = db.prepare(list(KEPT_MAX_PARAMETERS + 1));
    expect(db.prepare(list(KEPT_MAX_PARAMETERS + 1))).not.toBe(big);
    const ids = Array.from({ length: 500 }, (_, i) => i);
    expect(db.prepare(list(500)).all(...ids)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
  });

  it('the store answers the same through deletes and listings of every size (each size its own SQL)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'coffer-store-'));
    const store = await openSqliteStore(join(dir, 'coffer.sqlite'));
    try {
      for (let n = 1; n <= 500; n += 37) {
        const ids = Array.from({ length: n }, (_, i) => `missing-${i}`);
        await store.transaction((tx) => tx.deleteFiles(ids));
        expect(await store.read.filesInFolders(ids)).toEqual([]);
      }
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
