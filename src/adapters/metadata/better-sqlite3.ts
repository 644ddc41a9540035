/**
 * better-sqlite3, in the line that works on the running Node:
 * - 12 on Node 20: 13 does not run there (it stops the process with a segmentation fault);
 * - 13 (`better-sqlite3-napi`, an npm alias) on Node 22 and later. 12 wraps its objects in
 *   Node's own ObjectWrap, and from Node 24.19 a statement collected by a garbage collection
 *   that runs outside JavaScript (an idle-time one, say) aborts the process in that class's
 *   destructor; 13 is built on Node-API and has no such destructor.
 * Both have the same API, so the same types serve.
 */
import { createRequire } from 'node:module';
import type BetterSqlite3Module from 'better-sqlite3';

/** The package this Node loads. */
export const BETTER_SQLITE3_PACKAGE = Number(process.versions.node.split('.')[0]) >= 22 ? 'better-sqlite3-napi' : 'better-sqlite3';

const BetterSqlite3 = createRequire(import.meta.url)(BETTER_SQLITE3_PACKAGE) as typeof BetterSqlite3Module;
export default BetterSqlite3;
