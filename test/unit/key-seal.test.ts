/** A key's SigV4 secret: the digest HMAC uses for "AWS4" + key, sealed under the root key and bound to the key's id. */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openSecret, sealSecret, sealingKey, sigv4Secret } from '../../src/core/key-seal.js';

const KEY = 'ck_AAAAAAAAAAAAAAAAAAAAAA.BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';

describe('SigV4 secret of a key', () => {
  it('signs exactly as "AWS4" + key does in the first HMAC of the chain', () => {
    for (const date of ['20260101', '20991231']) {
      const direct = createHmac('sha256', `AWS4${KEY}`).update(date).digest('hex');
      expect(createHmac('sha256', sigv4Secret(KEY)).update(date).digest('hex')).toBe(direct);
    }
    expect(() => sigv4Secret('short')).toThrow(/longer than 60 bytes/);
  });

  it('opens under the same root key and id only, and not once altered', () => {
    const secret = sigv4Secret(KEY);
    const sealing = sealingKey('root-key-one');
    const sealed = sealSecret(sealing, 'id-1', secret);
    expect(sealed).not.toContain(secret.toString('base64url'));
    expect(openSecret(sealing, 'id-1', sealed)).toEqual(secret);
    expect(openSecret(sealingKey('root-key-two'), 'id-1', sealed)).toBeNull();
    expect(openSecret(sealing, 'id-2', sealed)).toBeNull();
    const [v, iv, body] = sealed.split('.');
    const flipped = Buffer.from(body!, 'base64url');
    flipped[0]! ^= 1;
    expect(openSecret(sealing, 'id-1', `${v}.${iv}.${flipped.toString('base64url')}`)).toBeNull();
    expect(openSecret(sealing, 'id-1', 'v2.x.y')).toBeNull();
    expect(openSecret(sealing, 'id-1', 'garbage')).toBeNull();
    // A fresh nonce each time: two seals of one secret differ.
    expect(sealSecret(sealing, 'id-1', secret)).not.toBe(sealed);
  });
});
