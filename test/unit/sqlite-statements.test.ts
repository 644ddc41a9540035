import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { keepingStatements } from '../../src/adapters/metadata/sqlite.js';

describe('prepared statements kept by their SQL', () => {
  const sqlite = new BetterSqlite3(':memory:');
  sqlite.exec('create table t (n integer)');
  sqlite.exec('insert into t values (1), (2), (3)');
  afterEach(() => sqlite.exec('delete from t where n > 3'));

  it('prepares a query once and runs it again with other parameters', () => {
    const db = keepingStatements(sqlite);
    const a = db.prepare('select n from t where n >= ?');
    const b = db.prepare('select n from t where n >= ?');
    expect(b).toBe(a);
    expect(b.all(2)).toEqual([{ n: 2 }, { n: 3 }]);
    expect(a.all(3)).toEqual([{ n: 3 }]);
  });

  it('gives a statement being iterated no second query: that one gets its own', () => {
    const db = keepingStatements(sqlite);
    const first = db.prepare('select n from t order by n');
    const rows = first.iterate();
    expect(rows.next().value).toEqual({ n: 1 });
    const second = db.prepare('select n from t order by n');
    expect(second).not.toBe(first);
    expect(second.all()).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect([...rows]).toEqual([{ n: 2 }, { n: 3 }]);
  });

  it('still sees rows written after it was prepared, and schema changes', () => {
    const db = keepingStatements(sqlite);
    const count = () => (db.prepare('select count(*) as c from t').get() as { c: number }).c;
    expect(count()).toBe(3);
    db.prepare('insert into t values (?)').run(4);
    expect(count()).toBe(4);
  });

  it('keeps at most 500, dropping the least recently used', () => {
    const db = keepingStatements(sqlite);
    const hot = db.prepare('select 0 as n');
    const once = db.prepare('select 1 as n');
    for (let i = 2; i <= 600; i++) {
      db.prepare(`select ${i} as n`);
      if (i % 100 === 0) expect(db.prepare('select 0 as n')).toBe(hot);
    }
    const again = db.prepare('select 1 as n');
    expect(again).not.toBe(once);
    expect(again.get()).toEqual({ n: 1 });
    expect(db.prepare('select 0 as n')).toBe(hot);
  });
});
