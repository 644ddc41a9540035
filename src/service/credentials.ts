/**
 * Keys and upload grants (contract §10): made here, returned once, stored as the SHA-256 of
 * their secret. A key hands out only what it has itself: its folder's subtree, its scopes,
 * its lifetime (service/lineage.ts); what it made stops with it.
 */
import { createHash } from 'node:crypto';
import { errors } from '../core/errors.js';
import type { FieldErrorCode } from '../core/error-codes.js';
import { newId, newSecretPart } from '../core/ids.js';
import { validateName } from '../core/names.js';
import { isoTime, parseVisibility } from '../core/records.js';
import { isSendableContentType } from '../core/file-types.js';
import { MAX_EXPIRY_SECONDS } from '../core/signing.js';
import { openSecret, sealSecret, sealingKey, sigv4Secret } from '../core/key-seal.js';
import {
  GRANT_PREFIX, KEY_PREFIX, SCOPES, parseScopes, rootFingerprint, splitCredential, type Caller, type Scope, type StoredGrant, type StoredKey,
} from '../core/access.js';
import type { MetadataTx } from '../core/ports.js';
import type {
  CreateGrantRequest, CreateGrantResponse, CreateKeyRequest, CreateKeyResponse, KeyRecord, ListKeysResponse, RevokeKeyResponse,
} from '../core/api-access.js';
import type { ServiceContext } from './context.js';
import { requireFolderInReach } from './access.js';
import { authorize, authorizeFolder, reachOf, type Action } from './policy.js';
import { checkChildKey, expiryWithin, grantStanding, keyStanding, makerOf } from './lineage.js';
import { hashMatches, refusal } from './presented.js';

const hashOf = (secret: string): string => createHash('sha256').update(secret).digest('hex');
/** Ten years: long enough for "until revoked", short enough to stay a safe integer of milliseconds. */
const MAX_KEY_SECONDS = 10 * 365 * 86_400;
const MAX_GRANT_FILES = 10_000;
const DEFAULT_GRANT_SECONDS = 3600;
const CONTENT_TYPE_PATTERN = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/\*$/i;

function keyRecord(k: StoredKey): KeyRecord {
  return {
    key_id: k.id, name: k.name, scopes: k.scopes.split(',').filter(Boolean), folder_id: k.folder_id, created_at: isoTime(k.created_at),
    expires_at: k.expires_at === null ? null : isoTime(k.expires_at), revoked_at: k.revoked_at === null ? null : isoTime(k.revoked_at),
    last_used_at: k.last_used_at === null ? null : isoTime(k.last_used_at), created_by: k.created_by,
  };
}

function parseScopeList(scopes: string[]): Scope[] {
  const wanted = [...new Set(scopes.map((s) => s.trim().toLowerCase()))];
  if (wanted.length === 0 || wanted.some((s) => !(SCOPES as readonly string[]).includes(s))) {
    throw errors.invalidField('invalid_scopes', 'scopes', '"scopes" must list one or more of "read", "write", "admin".');
  }
  return SCOPES.filter((s) => wanted.includes(s));
}

function wholeNumber(value: number | null | undefined, fallback: number | null, min: number, max: number, code: FieldErrorCode, field: string): number | null {
  if (value === undefined || value === null) return fallback;
  if (!Number.isInteger(value) || value < min || value > max) throw errors.invalidField(code, field, `"${field}" must be a whole number from ${min} to ${max}.`);
  return value;
}

/** What the S3 interface learns of an access key id: the caller it stands for and its SigV4 secret, or why not. */
export type S3Credential =
  | { ok: true; caller: Caller; secret: Buffer }
  | { ok: false; reason: 'unknown' | 'revoked' | 'expired' | 'not_sealed' };

const keyCaller = (row: StoredKey): Caller => ({ kind: 'key', keyId: row.id, scopes: parseScopes(row.scopes), folderId: row.folder_id });

/** A key's last use is written at most this often, so a busy key does not write on every request. */
const TOUCH_INTERVAL_MS = 60_000;

export class Credentials {
  private readonly sealing: Buffer | null;
  /** What root-made grants are bound to: a rotation of the root key ends them. */
  private readonly rootPrint: string | null;

  constructor(private readonly c: ServiceContext) {
    this.sealing = c.opts.rootKey ? sealingKey(c.opts.rootKey) : null;
    this.rootPrint = c.opts.rootKey ? rootFingerprint(c.opts.rootKey) : null;
  }

  /**
   * The caller a key presented by Bearer stands for; 401 when it is unknown or no longer
   * works. Read with its makers on every request, so a revoked key, or one whose maker was
   * revoked, fails at every origin at once.
   */
  async authenticateKey(credential: string): Promise<Caller> {
    const parts = splitCredential(KEY_PREFIX, credential);
    const row = parts ? await this.c.meta.read.keys.get(parts.id) : undefined;
    if (!parts || !row || !hashMatches(parts.secret, row.secret_hash)) throw errors.unauthorized('The access key is not valid.');
    const at = this.c.now();
    const standing = await keyStanding(this.c.meta.read.keys, row, at);
    if (!standing.ok) throw errors.unauthorized(refusal(standing, 'key'));
    this.touch(row, at);
    return keyCaller(row);
  }

  /** The caller an upload grant stands for; 401 when it is unknown or no longer works. */
  async authenticateGrant(credential: string): Promise<Caller> {
    const parts = splitCredential(GRANT_PREFIX, credential);
    const row = parts ? await this.c.meta.read.grants.get(parts.id) : undefined;
    if (!parts || !row || !hashMatches(parts.secret, row.secret_hash)) throw errors.unauthorized('The upload grant is not valid.');
    // A grant is worth no more than the keys that made it, or than the root key it was made with.
    const standing = await grantStanding(this.c.meta.read.keys, row, this.c.now(), this.rootPrint);
    if (!standing.ok) throw errors.unauthorized(refusal(standing, 'upload grant'));
    return { kind: 'grant', grant: row };
  }

  /**
   * The key an S3 request names by its access key id (contract §12), read with its makers on
   * every request so a revoked key, or one whose maker was revoked, fails at once.
   * `not_sealed`: made before S3 access, or under another root key.
   */
  async s3Credential(keyId: string): Promise<S3Credential> {
    const row = await this.c.meta.read.keys.get(keyId);
    if (!row) return { ok: false, reason: 'unknown' };
    const at = this.c.now();
    const standing = await keyStanding(this.c.meta.read.keys, row, at);
    if (!standing.ok) return { ok: false, reason: standing.reason === 'expired' ? 'expired' : 'revoked' };
    const secret = this.sealing && row.sigv4_secret ? openSecret(this.sealing, row.id, row.sigv4_secret) : null;
    if (!secret) return { ok: false, reason: 'not_sealed' };
    this.touch(row, at);
    return { ok: true, caller: keyCaller(row), secret };
  }

  /** Writes a key's last use, at most every TOUCH_INTERVAL_MS; best effort: the next use touches it again. */
  private touch(row: StoredKey, at: number): void {
    if (row.last_used_at !== null && row.last_used_at >= at - TOUCH_INTERVAL_MS) return;
    void this.c.background.run('key-touch', () => this.c.meta.read.keys.touch(row.id, at), { retry: false });
  }

  /** Whether a confined caller reaches the folder a key is confined to (the root: only unconfined callers). */
  private async reaches(tx: MetadataTx, caller: Caller, folderId: string | null): Promise<boolean> {
    try {
      await requireFolderInReach(tx, caller, folderId);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * The folder a new key or grant is confined to: the one asked for, by default the caller's
   * own; outside the caller's reach it answers 404, as if it did not exist.
   */
  private async confinement(tx: MetadataTx, caller: Caller, action: Action, asked: string | null | undefined): Promise<string | null> {
    const folderId = asked ?? reachOf(caller);
    await authorizeFolder(tx, caller, action, folderId);
    if (folderId !== null) await this.c.requireFolder(tx, folderId, 'folder_id', 'share');
    return folderId;
  }

  async createKey(caller: Caller, req: CreateKeyRequest): Promise<CreateKeyResponse> {
    authorize(caller, 'key.create');
    const name = validateName(req.name);
    const scopes = parseScopeList(req.scopes);
    const seconds = wholeNumber(req.expires_in, null, 1, MAX_KEY_SECONDS, 'invalid_expiry', 'expires_in');
    const secret = newSecretPart();
    const row = await this.c.meta.transaction(async (tx): Promise<StoredKey> => {
      const now = this.c.now();
      // Read again: a maker revoked since the request began makes nothing (and one revoked
      // a moment later still ends this key at its first use, by the lineage walk).
      const maker = await makerOf(tx.keys, caller, now);
      checkChildKey(maker, scopes);
      const folderId = await this.confinement(tx, caller, 'key.create', req.folder_id);
      const made: StoredKey = {
        id: newId(), name, secret_hash: hashOf(secret), scopes: scopes.join(','), folder_id: folderId, created_at: now,
        expires_at: expiryWithin(maker, seconds, null, now), revoked_at: null, last_used_at: null, created_by: maker.createdBy,
      };
      if (this.sealing) made.sigv4_secret = sealSecret(this.sealing, made.id, sigv4Secret(`${KEY_PREFIX}_${made.id}.${secret}`));
      await tx.keys.insert(made);
      return made;
    });
    return { ...keyRecord(row), key: `${KEY_PREFIX}_${row.id}.${secret}` };
  }

  async listKeys(caller: Caller): Promise<ListKeysResponse> {
    authorize(caller, 'key.read');
    const keys: KeyRecord[] = [];
    for (const k of await this.c.meta.read.keys.list()) {
      if (await this.reaches(this.c.meta.read, caller, k.folder_id)) keys.push(keyRecord(k));
    }
    return { keys };
  }

  async revokeKey(caller: Caller, keyId: string): Promise<RevokeKeyResponse> {
    authorize(caller, 'key.revoke');
    const row = await this.c.meta.transaction(async (tx) => {
      const k = await tx.keys.get(keyId);
      if (!k || !(await this.reaches(tx, caller, k.folder_id))) throw errors.keyNotFound(keyId);
      if (k.revoked_at === null) await tx.keys.revoke(k.id, this.c.now());
      return (await tx.keys.get(keyId))!;
    });
    return { key_id: row.id, revoked: true, revoked_at: isoTime(row.revoked_at!) };
  }

  async createGrant(caller: Caller, req: CreateGrantRequest): Promise<CreateGrantResponse> {
    authorize(caller, 'grant.create');
    const visibility = req.visibility === undefined ? null : parseVisibility(req.visibility);
    const maxSize = wholeNumber(req.max_size, 0, 0, this.c.opts.maxFileSize, 'invalid_max_size', 'max_size')!;
    let contentTypes: string[] | null = null;
    if (req.content_types !== undefined) {
      contentTypes = req.content_types.map((t) => t.trim());
      if (contentTypes.length === 0 || contentTypes.some((t) => !isSendableContentType(t) && !CONTENT_TYPE_PATTERN.test(t))) {
        throw errors.invalidField('invalid_content_type', 'content_types', '"content_types" must list media types such as "image/png" or "image/*".');
      }
    }
    const seconds = wholeNumber(req.expires_in, null, 1, MAX_EXPIRY_SECONDS, 'invalid_expiry', 'expires_in');
    const maxFiles = wholeNumber(req.max_files, 1, 1, MAX_GRANT_FILES, 'invalid_max_files', 'max_files')!;
    const secret = newSecretPart();
    const row = await this.c.meta.transaction(async (tx): Promise<StoredGrant> => {
      const now = this.c.now();
      const maker = await makerOf(tx.keys, caller, now);
      const folderId = await this.confinement(tx, caller, 'grant.create', req.folder_id);
      const made: StoredGrant = {
        id: newId(), secret_hash: hashOf(secret), folder_id: folderId, visibility, max_size: maxSize,
        content_types: contentTypes === null ? null : JSON.stringify(contentTypes), max_files: maxFiles, used_files: 0,
        created_at: now, expires_at: expiryWithin(maker, seconds, DEFAULT_GRANT_SECONDS, now)!, created_by: maker.createdBy,
        root_fingerprint: maker.createdBy === 'root' ? this.rootPrint : null,
      };
      await tx.grants.insert(made);
      return made;
    });
    return { grant: `${GRANT_PREFIX}_${row.id}.${secret}`, expires_at: isoTime(row.expires_at) };
  }
}
