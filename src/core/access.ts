/**
 * Who is calling, as the service sees it, and the records of keys and upload grants
 * (contract §10). Pure types and rules; the service applies them (service/access.ts).
 */
import { createHmac } from 'node:crypto';
import type { Visibility } from './records.js';

export type Scope = 'read' | 'write' | 'admin';
export const SCOPES: readonly Scope[] = ['read', 'write', 'admin'];

/** A key other than the root key. Only the SHA-256 of its secret is kept. */
export interface StoredKey {
  id: string;
  name: string;
  secret_hash: string;
  /** Comma-separated scopes. */
  scopes: string;
  folder_id: string | null;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
  last_used_at: number | null;
  /** The key's SigV4 signing secret, sealed (core/key-seal.ts); null for keys made before S3 access existed. */
  sigv4_secret?: string | null;
  /** "root" or the id of the key that made it (its maker); keys made before lineage was kept read "root". */
  created_by: string;
}

/** An upload grant: what a browser holding it may upload. Only the SHA-256 of its secret is kept. */
export interface StoredGrant {
  id: string;
  secret_hash: string;
  folder_id: string | null;
  visibility: Visibility | null;
  max_size: number;
  /** JSON array of allowed types (`image/*` allowed), or null for any. */
  content_types: string | null;
  max_files: number;
  used_files: number;
  created_at: number;
  expires_at: number;
  /** "root" or the id of the key that made it. */
  created_by: string;
  /** Made by the root key: that key's fingerprint (rootFingerprint), so a rotation ends it; null when a key made it. */
  root_fingerprint?: string | null;
}

export type Caller =
  /** The root key, or a Playground session (signed in with it). */
  | { kind: 'root'; via: 'key' | 'session'; sessionExpiresAt?: number }
  | { kind: 'key'; keyId: string; scopes: ReadonlySet<Scope>; folderId: string | null }
  | { kind: 'grant'; grant: StoredGrant }
  | { kind: 'edge' };

export const ROOT_CALLER: Caller = { kind: 'root', via: 'key' };

/**
 * What sessions and root-made grants store of the root key that made them: an HMAC under the
 * key of a fixed label. It names the key without revealing it, and differs from every other
 * digest of the key the service keeps (the sealing key, the Bearer comparison).
 */
export const rootFingerprint = (rootKey: string): string => createHmac('sha256', rootKey).update('coffer root key fingerprint v1').digest('hex');

export const parseScopes = (text: string): Set<Scope> =>
  new Set(text.split(',').filter((s): s is Scope => (SCOPES as readonly string[]).includes(s)));

/** Credentials other than the root key: a readable prefix, the row id, then the secret. */
export const KEY_PREFIX = 'ck';
export const GRANT_PREFIX = 'cg';

/** Splits "ck_<id>.<secret>" into its id and secret, or null for another shape. */
export function splitCredential(prefix: string, text: string): { id: string; secret: string } | null {
  const match = new RegExp(`^${prefix}_([A-Za-z0-9_-]{22})\\.([A-Za-z0-9_-]{43})$`).exec(text);
  return match ? { id: match[1]!, secret: match[2]! } : null;
}

/** Whether a content type is allowed by a grant's list (`image/*` matches every image type). */
export function contentTypeAllowed(allowed: readonly string[], contentType: string): boolean {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return allowed.some((a) => {
    const pattern = a.trim().toLowerCase();
    return pattern.endsWith('/*') ? type.startsWith(pattern.slice(0, -1)) : type === pattern;
  });
}
