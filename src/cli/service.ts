/** The commands that run the service's processes: `coffer serve`, `coffer origin` and `coffer edge`. */
import { join, resolve } from 'node:path';
import type { startEdge as StartEdge } from '../edge/server.js';
import type { startOrigin as StartOrigin } from '../start/origin.js';
import { ConfigError, SETTINGS, flagName, loadConfig, type Config, type SettingName } from '../config/config.js';
import { CREDENTIALS_FILE, MISSING_EDGE_TOKEN, type Generated } from '../config/credentials.js';
import { SERVICE_UMASK, prepareDataDir } from '../config/data-dir.js';
import { connectionBudget } from '../core/fd-budget.js';
import { settleEdge } from '../start/edge-early.js';

/** Options as commander hands them over (camel case), or as cli/edge-args.ts reads them. */
export type CommandOptions = Record<string, string | undefined>;

function configFrom(options: CommandOptions): Config {
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
/** An edge in a process of its own: loaded and started with the memory settings of start/edge-early.ts. */
const startEdgeProcess: typeof StartEdge = async (...args) => {
  const edge = await startEdge(...args);
  settleEdge((fn) => edge.follower.onTick(fn));
  return edge;
};

/**
 * The service's processes create files the owner alone can read, whatever library creates
 * them (SQLite's -wal and -shm, blobs, cached copies); client commands keep the user's umask.
 */
function restrictNewFiles(): void {
  process.umask(SERVICE_UMASK);
}

export async function runOrigin(options: CommandOptions): Promise<void> {
  const config = configFrom(options);
  restrictNewFiles();
  const origin = await startOrigin(config, { announce: announce(config.dataDir) });
  process.stdout.write(`origin listening on ${origin.url}\n`);
  process.stdout.write(`s3 listening on ${origin.s3Url}\n`);
  untilSignal(() => origin.close());
}

export async function runServe(options: CommandOptions): Promise<void> {
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

export async function runEdge(options: CommandOptions): Promise<void> {
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
