/**
 * A key's SigV4 secret, kept sealed (contract §12; docs/security.md, "S3 credentials").
 *
 * SigV4 is an HMAC: the server must hold what the client signs with. It never needs the key
 * itself, though. The chain starts with HMAC-SHA256("AWS4" + key, date); a key is 69
 * characters, so "AWS4" + key is longer than SHA-256's 64-byte block and HMAC uses its SHA-256
 * in its place. That digest is the signing secret: it signs S3 requests and nothing else (it
 * is not the Bearer key, and the key cannot be recovered from it). It is stored encrypted with
 * AES-256-GCM under a key derived from the root access key, bound to the key's id, so a copy of
 * the database alone signs nothing.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 'v1';

/** The digest that stands for "AWS4" + key in the first HMAC of SigV4's chain. */
export function sigv4Secret(key: string): Buffer {
  const material = Buffer.from(`AWS4${key}`, 'utf8');
  // Shorter material is used by HMAC as it is: the digest would not stand for it.
  if (material.length <= 64) throw new Error('a key must be longer than 60 bytes to be sealed for SigV4');
  return createHash('sha256').update(material).digest();
}

/** The sealing key: HKDF-SHA256 of the root access key, for this one purpose. */
export function sealingKey(rootKey: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(rootKey, 'utf8'), Buffer.from('coffer'), Buffer.from('sigv4 secret seal v1'), 32));
}

export function sealSecret(sealing: Buffer, keyId: string, secret: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealing, iv);
  cipher.setAAD(Buffer.from(keyId, 'utf8'));
  const sealed = Buffer.concat([cipher.update(secret), cipher.final(), cipher.getAuthTag()]);
  return `${VERSION}.${iv.toString('base64url')}.${sealed.toString('base64url')}`;
}

/** The secret, or null when it was sealed under another root key, for another id, or altered. */
export function openSecret(sealing: Buffer, keyId: string, text: string): Buffer | null {
  const [version, iv, body] = text.split('.');
  if (version !== VERSION || !iv || !body) return null;
  const ivBytes = Buffer.from(iv, 'base64url');
  const bytes = Buffer.from(body, 'base64url');
  if (ivBytes.length !== 12 || bytes.length !== 32 + 16) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealing, ivBytes);
    decipher.setAAD(Buffer.from(keyId, 'utf8'));
    decipher.setAuthTag(bytes.subarray(32));
    return Buffer.concat([decipher.update(bytes.subarray(0, 32)), decipher.final()]);
  } catch {
    return null;
  }
}
