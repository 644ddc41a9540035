#!/usr/bin/env node
/** The `coffer` command: runs the service's processes and talks to the service. */
// First: an edge's memory settings apply from the first module on.
import '../start/edge-early.js';
import { CofferError } from '../core/errors.js';
import { quickEdgeOptions } from './edge-args.js';
import { CliError } from './io.js';
import { runEdge } from './service.js';

function fail(err: unknown): void {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`coffer: ${message}${err instanceof CofferError && err.status > 0 ? ` (${err.code})` : ''}\n`);
  process.exit(err instanceof CliError ? err.exitCode : 1);
}

// An edge started with well-formed options runs without commander and the client commands'
// modules, which would stay in each edge's memory; every other command line goes to commander.
const edgeOptions = process.argv[2] === 'edge' ? quickEdgeOptions(process.argv.slice(3)) : null;
const run = edgeOptions ? runEdge(edgeOptions) : import('./program.js').then((p) => p.runProgram(process.argv));
run.catch(fail);
