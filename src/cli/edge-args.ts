/**
 * `coffer edge`'s words read without commander when every one is an option the edge takes,
 * with its value: commander and the client commands' modules then stay out of an edge's
 * memory (about 1 MB of each edge process). Anything else (--help, an unknown word, a
 * missing value or --origin) reads as null, and the command line goes to commander
 * (cli/program.ts), which answers it as it always did.
 */
import { SETTINGS, flagName } from '../config/config.js';
import type { CommandOptions } from './service.js';

/** The edge's own options, beside the settings every service command takes (program.ts). */
export const EDGE_OPTIONS = ['origin', 'parent', 'name'] as const;

/** Every long option `coffer edge` takes, without its dashes: its own and both forms of each setting. */
export function edgeOptionNames(): Set<string> {
  const names = new Set<string>(EDGE_OPTIONS);
  for (const [name] of SETTINGS) {
    names.add(flagName(name));
    names.add(name.toLowerCase().replace(/_/g, '-'));
  }
  return names;
}

/** What commander names an option's value: `--edge-port` is `edgePort`. */
const camel = (s: string) => s.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** The options of `coffer edge WORDS…` as commander would hand them over, or null when only commander should answer. */
export function quickEdgeOptions(words: readonly string[], names: ReadonlySet<string> = edgeOptionNames()): CommandOptions | null {
  const options: CommandOptions = {};
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (!word.startsWith('--')) return null;
    const eq = word.indexOf('=');
    const name = word.slice(2, eq < 0 ? undefined : eq);
    if (!names.has(name)) return null;
    const value = eq < 0 ? words[++i] : word.slice(eq + 1);
    if (value === undefined || (eq < 0 && value.startsWith('-'))) return null;
    // The last of a repeated option wins, as with commander.
    options[camel(name)] = value;
  }
  return options.origin === undefined ? null : options;
}
