import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import BetterSqlite3, { BETTER_SQLITE3_PACKAGE } from '../../src/adapters/metadata/better-sqlite3.js';
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

describe('the better-sqlite3 line this Node loads (src/adapters/metadata/better-sqlite3.ts)', () => {
  const major = Number(process.versions.node.split('.')[0]);

  it('is 12 on Node 20 and 13 (Node-API) from Node 22', () => {
    const version = createRequire(import.meta.url)(`${BETTER_SQLITE3_PACKAGE}/package.json`).version as string;
    expect(version.split('.')[0]).toBe(major >= 22 ? '13' : '12');
  });

  it('lets dropped statements be collected by a collection that finishes while JavaScript is idle', async () => {
    // On Node 24.19+ with better-sqlite3 12, a statement collected outside JavaScript (here:
    // marking started by the garbage below, finished by V8's own task while the loop waits)
    // aborts the process in RemoveEnvironmentCleanupHook.
    const script = `
      import BetterSqlite3 from ${JSON.stringify(pathToFileURL(resolve('src/adapters/metadata/better-sqlite3.ts')).href)};
      const db = new BetterSqlite3(':memory:');
      db.exec('create table t (n integer)');
      const garbage = [];
      for (let round = 0; round < 10; round++) {
        for (let i = 0; i < 5000; i++) db.prepare('insert into t values (' + i + ')').run();
        for (let i = 0; i < 200; i++) garbage.push(new Array(10000).fill(round));
        garbage.length = 0;
        await new Promise((r) => setTimeout(r, 100));
      }
      console.log(db.prepare('select count(*) as c from t').get().c);
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => { out += d; });
    child.stderr.on('data', (d: Buffer) => { err += d; });
    const [code, signal] = (await once(child, 'exit')) as [number | null, string | null];
    expect({ code, signal, out: out.trim() }, err.slice(0, 2000)).toEqual({ code: 0, signal: null, out: '50000' });
  }, 30_000);
});
