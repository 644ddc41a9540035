/**
 * The service: every rule of contract §4–§6 over the ports, one aggregate per part
 * (uploads and tus, tree, listing, files, links, sessions, credentials, webhooks, usage; paths, objects and
 * multipart for the S3 interface); who may do what is decided in access.ts. No HTTP
 * here: routes hand in plain values and get records back or a CofferError.
 */
import type { BlobStore, MetadataStore } from '../core/ports.js';
import { ServiceContext, type ServiceOptions } from './context.js';
import { Uploads } from './uploads/json.js';
import { UploadEngine } from './uploads/engine.js';
import { Tree } from './tree.js';
import { Listing } from './listing.js';
import { Files } from './files.js';
import { Links } from './links.js';
import { Sessions } from './sessions.js';
import { Credentials } from './credentials.js';
import { Webhooks } from './webhooks.js';
import { Usage } from './usage.js';
import { TusUploads } from './uploads/tus.js';
import { Paths } from './paths.js';
import { Objects } from './uploads/s3-objects.js';
import { Multipart } from './uploads/s3.js';
import type { Background } from './background.js';
import { WebhookSender } from './webhooks/sender.js';

export type { EventPublisher, ServiceOptions } from './context.js';
export type { WebhookSendOptions } from './webhooks/sender.js';
export type { WebhookPost, WebhookRequest, WebhookResponse } from './webhooks/post.js';
export type { PartInput } from './uploads/json.js';
export { BACKGROUND_TASKS, Background, type BackgroundTask } from './background.js';
export { DEFAULT_SESSION_TTL_SECONDS, sessionTokenHash, type Session } from './sessions.js';

/**
 * The service over its two ports, which it keeps to itself: whoever uses it (the origin, the
 * S3 interface, the CLI) goes through its aggregates' calls. Every collaborator comes in
 * through the constructor.
 */
export class CofferService {
  /** A true private field: not even JavaScript outside reaches the ports through it. */
  readonly #c: ServiceContext;
  readonly uploads: Uploads;
  readonly tree: Tree;
  readonly listing: Listing;
  readonly files: Files;
  readonly links: Links;
  readonly sessions: Sessions;
  readonly credentials: Credentials;
  readonly webhooks: Webhooks;
  readonly usage: Usage;
  readonly tus: TusUploads;
  readonly paths: Paths;
  readonly objects: Objects;
  readonly multipart: Multipart;
  /** Where work no request waits for runs (background.ts). */
  readonly background: Background;

  constructor(meta: MetadataStore, blobs: BlobStore, readonly opts: Readonly<ServiceOptions>) {
    // The sender exists before the context, so each committed change wakes it, before the
    // publisher (the edges) is waited for: deliveries never wait on edges, nor a change on receivers.
    const sender = new WebhookSender(meta, { ...opts.webhooks, allowPrivate: opts.webhookAllowPrivate ?? false, now: opts.now ?? Date.now });
    const publish = opts.publish;
    this.#c = new ServiceContext(meta, blobs, {
      ...opts,
      publish: async (seq) => {
        sender.wake();
        await publish?.(seq);
      },
    });
    this.background = this.#c.background;
    const engine = new UploadEngine(this.#c);
    this.uploads = new Uploads(this.#c, engine);
    this.tree = new Tree(this.#c);
    this.listing = new Listing(this.#c);
    this.files = new Files(this.#c);
    this.links = new Links(this.#c);
    this.sessions = new Sessions(this.#c);
    this.credentials = new Credentials(this.#c);
    this.webhooks = new Webhooks(this.#c, sender);
    this.usage = new Usage(this.#c);
    this.tus = new TusUploads(this.#c, engine);
    this.paths = new Paths(this.#c);
    this.objects = new Objects(this.#c, engine, this.paths);
    this.multipart = new Multipart(this.#c, engine, this.paths);
  }

  /** Removes blobs queued by earlier changes: after each change, and at start. Rejects when some are left. */
  emptyTrash(): Promise<void> {
    return this.#c.trash.empty();
  }

  /** The delivery address files' URLs start with (contract §7). */
  deliveryUrl(): string {
    return this.#c.cdnUrl;
  }
}
