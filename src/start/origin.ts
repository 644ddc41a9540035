/**
 * Starts an origin process: its stores, credentials, the service over them, the edge feed, the
 * origin's listener (src/origin) and the S3 interface's (src/s3), and the sweeper. The one
 * place that knows both listeners: src/origin and src/s3 do not import each other.
 */
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config/config.js';
import { resolveCredentials, type Credentials, type Generated } from '../config/credentials.js';
import { prepareDataDir, restrictFiles } from '../config/data-dir.js';
import { openBlobStore, openMetadataStore } from '../adapters/open.js';
import type { BlobStore, MetadataStore } from '../core/ports.js';
import { Background, CofferService } from '../service/service.js';
import { watchUnhandledRejections } from '../metrics/unhandled.js';
import { originMetrics } from '../origin/metrics.js';
import { buildOriginApp } from '../origin/app.js';
import { buildS3App } from '../s3/server.js';
import { EdgeHub } from '../feed/hub.js';
import { openEventWake } from '../feed/event-wake.js';
import { EdgeRecords } from '../feed/records.js';
import { HotBytes } from '../core/hot-bytes.js';
import { systemClock, type Clock } from '../core/clock.js';
import { join } from 'node:path';
import { listenerCaps } from '../core/fd-budget.js';

export interface RunningOrigin {
  url: string;
  port: number;
  /** The S3 interface at the root of its own port (contract §12). */
  s3Url: string;
  s3Port: number;
  app: FastifyInstance;
  service: CofferService;
  /**
   * The stores this process opened and closes; the service keeps its own reference and exposes
   * none. For tests and operators' tools that look beneath the service.
   */
  stores: OriginStores;
  credentials: Credentials;
  hub: EdgeHub;
  close(): Promise<void>;
}

/** The ports an origin's service runs over. */
export interface OriginStores {
  meta: MetadataStore;
  blobs: BlobStore;
}

export interface StartOriginOptions {
  /** Told once, when credentials were generated. */
  announce?: (generated: Generated) => void;
  logStream?: NodeJS.WritableStream;
  /** The Playground's build, when not dist/playground next to the compiled origin. */
  playgroundDir?: string;
  /**
   * Hands the service other stores in place of the ones opened (tests: a store that fails);
   * the ones opened are still the ones closed.
   */
  wrapStores?: (stores: OriginStores) => OriginStores;
  /** Time for the service, the edge feed and the sweep (tests move it by hand); the system's by default. */
  clock?: Clock;
}

/** Sweeps often enough that an upload never outlives its time by much. */
export const sweepInterval = (ttlSeconds: number): number => Math.min(60_000, Math.max(250, (ttlSeconds * 1000) / 4));

/** How long after its completion a new file's bytes may wait for the edges' acknowledgements (feed/records.ts). */
const FILL_HOLD_MS = 1000;

/** New files up to 16 MiB, 64 MiB in all, held in memory while edges fetch them (core/hot-bytes.ts). */
const HOT_FILES = { capacity: 64 << 20, fileLimit: 16 << 20, idleMs: 10_000 };

export async function startOrigin(config: Config, opts: StartOriginOptions = {}): Promise<RunningOrigin> {
  const clock = opts.clock ?? systemClock;
  const hotFiles = new HotBytes({ ...HOT_FILES, clock });
  // Two listeners, the origin's and S3's, unless `coffer serve` shared the budget out already.
  const connections = listenerCaps(config, 2);
  const dataDir = await prepareDataDir(config.dataDir);
  const credentials = await resolveCredentials(config.dataDir, config, opts.announce ?? (() => {}));
  const meta = await openMetadataStore(config.dataDir, config.databaseUrl);
  if (!config.databaseUrl) {
    // SQLite gives a -wal or -shm it creates later the main file's mode.
    const db = join(config.dataDir, 'coffer.sqlite');
    await restrictFiles([db, `${db}-wal`, `${db}-shm`]);
  }
  const blobs = await openBlobStore(config.dataDir, config.blobStore);
  const background = new Background({
    onFailure: (task, err) => {
      app.log.error({ err, task }, `background ${task} failed`);
      metrics.backgroundFailure(task);
    },
  });
  const stores = opts.wrapStores?.({ meta, blobs }) ?? { meta, blobs };
  const service = new CofferService(stores.meta, stores.blobs, {
    now: () => clock.now(),
    background,
    cdnUrl: () => config.cdnUrl,
    signingSecrets: credentials.signingSecrets,
    rootKey: credentials.accessKey,
    uploadTtlSeconds: config.uploadTtl,
    sessionTtlSeconds: config.sessionTtl,
    maxFileSize: config.maxFileSize,
    webhookAllowPrivate: config.webhookAllowPrivate,
    onBackgroundError: (what, err) => app.log.error({ err }, `${what} failed`),
    // `app`, `hub` and `metrics` are made below; these are called only once the origin serves.
    webhooks: {
      retryBaseMs: config.webhookRetryBaseMs,
      onError: (what, err) => app.log.warn({ err }, `${what} failed`),
      onAttempt: (outcome) => metrics.webhookAttempt(outcome),
    },
    publish: async (seq) => {
      const started = clock.monotonic();
      await hub.publish(seq);
      metrics.changeAcknowledged((clock.monotonic() - started) / 1000);
    },
  });
  // Edges' acknowledgements and leases live in the database, so several origins sharing it
  // agree on them; other origins' events and acknowledgements are polled for, and on
  // PostgreSQL also announced by NOTIFY.
  const hub = new EdgeHub(meta, {
    leaseMs: config.edgeLeaseMs,
    wake: openEventWake(config.databaseUrl, (err) => app.log.warn({ err }, 'listening for other origins\' changes failed; polling only'), clock),
    onError: (what, err) => app.log.error({ err }, `${what} failed`),
  }, clock);
  const metrics = originMetrics({ openUploads: () => service.usage.openUploads() }, hub);
  const app = await buildOriginApp({
    service, accessKey: credentials.accessKey, baseUrl: config.baseUrl, currentBaseUrl: () => config.baseUrl, rateLimit: config.rateLimit, logLevel: config.logLevel,
    sessionTtlSeconds: config.sessionTtl, headersTimeoutMs: config.headersTimeoutMs, idleTimeoutMs: config.idleTimeoutMs, connections,
    ...(opts.logStream ? { logStream: opts.logStream } : {}),
    ...(opts.playgroundDir ? { playgroundDir: opts.playgroundDir } : {}),
    edges: { hub, records: new EdgeRecords(meta, blobs, { settled: (ms) => hub.settled(ms), now: () => clock.now(), holdMs: FILL_HOLD_MS }, hotFiles), tokens: credentials.edgeTokens },
    metrics, ...(config.metricsToken ? { metricsToken: config.metricsToken } : {}),
  });
  if (dataDir.warning) app.log.warn(dataDir.warning);
  // Listening keeps the process up after one, so it must be heard: logged and counted.
  const unwatch = watchUnhandledRejections((reason) => {
    app.log.error({ err: reason }, 'a promise was rejected and nothing handled it');
    metrics.unhandledRejection();
  });
  // After the app exists (the hub logs through it), before anything is served.
  await hub.start();

  // The sweep itself comes round again, so its steps are not retried in between.
  const sweep = async () => {
    await background.run('upload-expiry', () => service.uploads.expire(), { retry: false });
    await background.run('trash', () => service.emptyTrash());
    await background.run('session-expiry', () => service.sessions.expire(), { retry: false });
  };
  await sweep();
  const timer = clock.setInterval(sweep, sweepInterval(Math.min(config.uploadTtl, config.sessionTtl)));
  timer.unref?.();

  const s3App = await buildS3App({
    service, accessKey: credentials.accessKey, rateLimit: config.rateLimit, logLevel: config.logLevel,
    headersTimeoutMs: config.headersTimeoutMs, idleTimeoutMs: config.idleTimeoutMs, connections, ...(opts.logStream ? { logStream: opts.logStream } : {}),
  });
  await app.listen({ host: config.host, port: config.port });
  try {
    await s3App.listen({ host: config.host, port: config.s3Port });
  } catch (err) {
    unwatch();
    await app.close();
    throw err;
  }
  service.webhooks.start();
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const s3Address = s3App.server.address();
  const s3Port = typeof s3Address === 'object' && s3Address ? s3Address.port : config.s3Port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  // With port 0 the default base URL is known only now.
  if (config.baseUrl.endsWith(':0')) config.baseUrl = `http://${host}:${port}`;

  let closing: Promise<void> | null = null;
  return {
    url: `http://${host}:${port}`,
    port,
    s3Url: `http://${host}:${s3Port}`,
    s3Port,
    app,
    service,
    stores,
    credentials,
    hub,
    close() {
      closing ??= (async () => {
        clock.clearInterval(timer);
        // In-flight requests finish; then nothing is left writing.
        hub.endStreams();
        await Promise.all([app.close(), s3App.close()]);
        // Its sweeper stops and nothing is kept for edges that are gone.
        hotFiles.clear();
        await service.webhooks.close();
        await hub.close();
        await service.uploads.drain();
        await background.close();
        // What is left stays queued for the next start.
        await background.run('trash', () => service.emptyTrash(), { retry: false });
        await blobs.close();
        await meta.close();
        unwatch();
      })();
      return closing;
    },
  };
}
