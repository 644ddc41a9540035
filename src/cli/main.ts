#!/usr/bin/env node
/** The `coffer` command: runs the service's processes. */
// First: an edge's memory settings apply from the first module on.
import '../start/edge-early.js';
import { Command, Option } from 'commander';
import { resolve } from 'node:path';
import type { startEdge as StartEdge } from '../edge/server.js';
import type { startOrigin as StartOrigin } from '../start/origin.js';
import { ConfigError, SETTINGS, flagName, loadConfig, type Config, type SettingName } from '../config/config.js';
import { CREDENTIALS_FILE, MISSING_EDGE_TOKEN, type Generated } from '../config/credentials.js';
import { SERVICE_UMASK, prepareDataDir } from '../config/data-dir.js';
import { join } from 'node:path';
import { CofferError } from '../core/errors.js';
import { connectionBudget } from '../core/fd-budget.js';
import { dashIdsAsOperands, registerAccessCommands, registerClientCommands } from './commands.js';
import { CliError } from './io.js';

function addSettings(cmd: Command): Command {
  for (const [name, help] of SETTINGS) {
    cmd.addOption(new Option(`--${flagName(name)} <value>`, `${help} [${name}]`));
    // The contract's literal reading of "a flag of the same name in kebab case".
    cmd.addOption(new Option(`--${name.toLowerCase().replace(/_/g, '-')} <value>`).hideHelp());
  }
  return cmd;
}

function configFrom(options: Record<string, string | undefined>): Config {
  const flags: Partial<Record<SettingName, string>> = {};
  const camel = (s: string) => s.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
  for (const [name] of SETTINGS) {
    const value = options[camel(flagName(name))] ?? options[camel(name.toLowerCase().replace(/_/g, '-'))];
    if (value !== undefined) flags[name] = value;
  }
  return loadConfig(process.env, flags);
}

function announce(dataDir: string) {
  return (generated: Generated) => {
    const lines = [`Generated credentials, saved in ${resolve(dataDir, CREDENTIALS_FILE)} (mode 0600). They are shown only this once:`];
    if (generated.accessKey) lines.push(`  COFFER_ACCESS_KEY=${generated.accessKey}`);
    if (generated.signingSecret) lines.push(`  COFFER_SIGNING_SECRET=${generated.signingSecret}`);
    if (generated.edgeToken) lines.push(`  COFFER_EDGE_TOKEN=${generated.edgeToken}    (give it to every \`coffer edge\`)`);
    process.stdout.write(lines.join('\n') + '\n');
  };
}

/** Runs until SIGTERM or SIGINT, then closes gracefully; a second signal exits at once. */
function untilSignal(close: () => Promise<void>): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(130);
    stopping = true;
    process.stderr.write(`${signal} received: finishing in-flight requests\n`);
    const force = setTimeout(() => process.exit(1), 30_000);
    force.unref();
    close().then(() => process.exit(0), (err) => {
      process.stderr.write(`shutdown failed: ${(err as Error).message}\n`);
      process.exit(1);
    });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

// The service's modules load only for the commands that run it, so client commands start fast.
const startOrigin: typeof StartOrigin = async (...args) => {
  const memory = await import('../start/memory.js');
  memory.keepYoungGenerationSmall();
  const origin = await (await import('../start/origin.js')).startOrigin(...args);
  memory.compactAfterStart();
  return origin;
};
const startEdge: typeof StartEdge = async (...args) => (await import('../edge/server.js')).startEdge(...args);
/** An edge in a process of its own: loaded (start/edge-early.ts) and started with the memory settings of start/memory.ts. */
const startEdgeProcess: typeof StartEdge = async (...args) => {
  const memory = await import('../start/memory.js');
  const edge = await startEdge(...args);
  memory.settleEdgeAfterStart();
  return edge;
};

/**
 * The service's processes create files the owner alone can read, whatever library creates
 * them (SQLite's -wal and -shm, blobs, cached copies); client commands keep the user's umask.
 */
function restrictNewFiles(): void {
  process.umask(SERVICE_UMASK);
}

async function runOrigin(options: Record<string, string | undefined>): Promise<void> {
  const config = configFrom(options);
  restrictNewFiles();
  const origin = await startOrigin(config, { announce: announce(config.dataDir) });
  process.stdout.write(`origin listening on ${origin.url}\n`);
  process.stdout.write(`s3 listening on ${origin.s3Url}\n`);
  untilSignal(() => origin.close());
}

async function runServe(options: Record<string, string | undefined>): Promise<void> {
  const configured = configFrom(options);
  // Three listeners in one process, origin, S3 and edge: each gets its share of the descriptors.
  const config = { ...configured, maxConnections: configured.maxConnections ?? connectionBudget(3) };
  restrictNewFiles();
  const origin = await startOrigin(config, { announce: announce(config.dataDir) });
  process.stdout.write(`origin listening on ${origin.url}\n`);
  process.stdout.write(`s3 listening on ${origin.s3Url}\n`);
  const { signingSecrets, edgeTokens } = origin.credentials;
  const edge = await startEdge({ ...config, signingSecrets, edgeTokens }, origin.url, { cacheDir: join(config.dataDir, 'edge-cache') });
  // With COFFER_EDGE_PORT=0 the delivery address is known only now.
  if (config.cdnUrl.endsWith(':0')) config.cdnUrl = edge.url;
  process.stdout.write(`edge listening on ${edge.url}\n`);
  untilSignal(async () => {
    await edge.close();
    await origin.close();
  });
}

async function runEdge(options: Record<string, string | undefined>): Promise<void> {
  // --parent and --name are the edge's short forms of --edge-parents and --edge-name.
  const config = configFrom({ ...options, edgeParents: options.parent ?? options.edgeParents, edgeName: options.name ?? options.edgeName });
  const originUrl = options.origin;
  if (!originUrl) throw new ConfigError('coffer edge needs --origin URL: the address of the origin to follow.');
  // Before anything is created on disk.
  if (config.edgeTokens.length === 0) throw new ConfigError(MISSING_EDGE_TOKEN);
  restrictNewFiles();
  const cacheDir = await prepareDataDir(config.dataDir, "edge's cache directory");
  if (cacheDir.warning) process.stderr.write(`warning: ${cacheDir.warning}\n`);
  const edge = await startEdgeProcess(config, originUrl);
  process.stdout.write(`edge listening on ${edge.url}\n`);
  untilSignal(() => edge.close());
}

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

program.parseAsync(dashIdsAsOperands(program, process.argv)).catch((err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`coffer: ${message}${err instanceof CofferError && err.status > 0 ? ` (${err.code})` : ''}\n`);
  process.exit(err instanceof CliError ? err.exitCode : 1);
});
