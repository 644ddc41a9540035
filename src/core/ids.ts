/** Web Crypto's generator: the same code runs in Node and in a browser. */
function randomBase64Url(bytes: number): string {
  const buf = new Uint8Array(bytes);
  globalThis.crypto.getRandomValues(buf);
  return bytesToBase64Url(buf);
}

export function bytesToBase64Url(bytes: Uint8Array): string {
  let bin = '';
  for (let i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i]!);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/**
 * 128 random bits, URL-safe: opaque and unguessable. Never starting with "-", so an id
 * on a command line is not taken for an option (drawing again costs under 1/64 of a bit).
 */
export function newId(): string {
  for (;;) {
    const id = randomBase64Url(16);
    if (id[0] !== '-') return id;
  }
}

/** A secret: 256 random bits with a readable prefix so scanners can spot leaks. */
export const newSecret = (prefix: string): string => `${prefix}_${randomBase64Url(32)}`;

/** The secret half of a key or grant: 256 random bits, 43 URL-safe characters. */
export const newSecretPart = (): string => randomBase64Url(32);
