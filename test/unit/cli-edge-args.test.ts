/**
 * `coffer edge` read without commander (src/cli/edge-args.ts): for every command line it
 * takes, the options are those commander hands the edge; every other one is left to
 * commander, so help, usage errors and their exit codes stay commander's.
 */
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { edgeOptionNames, quickEdgeOptions } from '../../src/cli/edge-args.js';
import { buildProgram } from '../../src/cli/program.js';

function edgeCommand(): Command {
  const edge = buildProgram().commands.find((c) => c.name() === 'edge');
  if (!edge) throw new Error('no edge command');
  return edge;
}

/** The options commander's `coffer edge` action receives for these words. */
async function commanderOptions(words: string[]): Promise<Record<string, string>> {
  const program = buildProgram();
  let got: Record<string, string> | null = null;
  program.commands.find((c) => c.name() === 'edge')!.action((opts: Record<string, string>) => {
    got = { ...opts };
  });
  program.exitOverride();
  await program.parseAsync(['node', 'coffer', 'edge', ...words]);
  if (!got) throw new Error('the edge action did not run');
  return got;
}

describe('coffer edge options without commander', () => {
  it('knows exactly the long options the edge command defines', () => {
    const defined = edgeCommand().options.map((o) => o.long!.slice(2));
    expect(new Set(defined)).toEqual(edgeOptionNames());
  });

  it.each([
    [['--origin', 'http://127.0.0.1:8080']],
    [['--origin=http://o:1', '--edge-port', '0', '--coffer-host=::1', '--name', 'eu-west-1a']],
    [['--parent', 'http://p1:8081,http://p2:8081', '--origin', 'http://o:1', '--data-dir', '/tmp/x y', '--metrics-token=a=b']],
    [['--origin', 'http://a:1', '--origin', 'http://b:2', '--coffer-edge-cache-bytes', '1000']],
    [['--origin=', '--name=']],
  ])('reads %j as commander does', async (words) => {
    expect(quickEdgeOptions(words)).toEqual(await commanderOptions(words));
  });

  it.each([
    [[]],
    [['--help']],
    [['-h']],
    [['--origin']],
    [['--origin', '--name', 'x']],
    [['--name', 'x']],
    [['--origin', 'http://o:1', '--no-such-option', '1']],
    [['--origin', 'http://o:1', 'extra']],
    [['--origin', 'http://o:1', '--']],
    [['--origin', 'http://o:1', '--port', '-1']],
  ])('leaves %j to commander', (words) => {
    expect(quickEdgeOptions(words)).toBeNull();
  });
});
