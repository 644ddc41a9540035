/**
 * The `coffer` command line, read by commander: every command, its options and its help.
 * `coffer edge` with well-formed options skips it (cli/edge-args.ts).
 */
import { Command, Option } from 'commander';
import { SETTINGS, flagName } from '../config/config.js';
import { dashIdsAsOperands, registerAccessCommands, registerClientCommands } from './commands.js';
import { runEdge, runOrigin, runServe } from './service.js';

function addSettings(cmd: Command): Command {
  for (const [name, help] of SETTINGS) {
    cmd.addOption(new Option(`--${flagName(name)} <value>`, `${help} [${name}]`));
    // The contract's literal reading of "a flag of the same name in kebab case".
    cmd.addOption(new Option(`--${name.toLowerCase().replace(/_/g, '-')} <value>`).hideHelp());
  }
  return cmd;
}

export function buildProgram(): Command {
  const program = new Command()
    .name('coffer')
    .description('Coffer: file storage and edge delivery. Runs the service (serve, origin, edge) and talks to it (upload, sync, ls, mkdir, mv, rename, visibility, rm, link, download, keys, grant, revoke-links).')
    .showHelpAfterError('(run with --help for usage)')
    // Usage errors read like every other failure: "coffer: missing required argument 'id'".
    // Set before the sub-commands are made: they copy it.
    .configureOutput({ outputError: (str, write) => write(str.replace(/^error: /, 'coffer: ')) })
    .addHelpText('after', `
Client commands reach the service at COFFER_URL (default http://127.0.0.1:8080) with
COFFER_ACCESS_KEY, or --url and --key. Run \`coffer <command> --help\` for its options.

Examples:
  npm start                                  # the service, embedded storage
  coffer upload ./photos --private           # a folder becomes folders
  coffer sync ./site /websites/site --delete # mirror a directory; unchanged files are skipped
  coffer ls
  coffer link <FILE_ID> --expiry 900
  coffer link <FILE_ID> --width 400 --format webp   # a signed image variant
  coffer keys create --name site --scope read --folder /photos
`);

  addSettings(program.command('serve').description('Run one origin and one edge with embedded storage: what `npm start` runs.'))
    .addHelpText('after', '\nExample:\n  COFFER_DATA_DIR=./data coffer serve --port 8080 --edge-port 8081\n')
    .action(runServe);

  addSettings(program.command('origin').description('Run the origin: the programmatic interface and the edges\' feed.'))
    .addHelpText('after', '\nExample:\n  COFFER_ACCESS_KEY=… COFFER_SIGNING_SECRET=… coffer origin --port 8080\n')
    .action(runOrigin);

  addSettings(program.command('edge').description('Run one edge location: delivery of /files/{id}, following an origin.'))
    .requiredOption('--origin <url>', 'the origin to follow, e.g. http://127.0.0.1:8080')
    .option('--parent <urls>', 'parent edges to fill from before the origin, comma-separated, first first (up to 8) [COFFER_EDGE_PARENTS]')
    .option('--name <name>', "this edge's name or region shown to operators (default: the host name) [COFFER_EDGE_NAME]")
    .addHelpText('after', '\nCOFFER_EDGE_TOKEN is the edges\' credential: the origin printed it on its first start and keeps it\nas "edge_token" in credentials.json in its data directory. Every edge also serves its child edges\n(those started with --parent pointing at it) with the same token.\n\nExamples:\n  COFFER_SIGNING_SECRET=… COFFER_EDGE_TOKEN=… coffer edge --origin http://127.0.0.1:8080 --edge-port 8081 --data-dir ./edge-cache\n  coffer edge --origin https://origin.internal:8443 --parent http://10.0.1.5:8081,http://10.0.2.5:8081 --name eu-west-1a\n')
    .action(runEdge);

  registerClientCommands(program);
  registerAccessCommands(program);
  return program;
}

/** Parses the command line and runs what it names. */
export async function runProgram(argv: string[]): Promise<void> {
  const program = buildProgram();
  await program.parseAsync(dashIdsAsOperands(program, argv));
}
