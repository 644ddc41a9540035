/**
 * The checksums S3 clients send with a body (x-amz-checksum-* headers or trailers), computed
 * as the bytes stream by: CRC32 (zlib's), CRC32C and CRC64/NVME (tables, here), SHA-1 and
 * SHA-256. Each value is the big-endian digest in base64, as S3 writes it.
 */
import { createHash, type Hash } from 'node:crypto';
import { crc32 } from 'node:zlib';

export type ChecksumAlgorithm = 'crc32' | 'crc32c' | 'crc64nvme' | 'sha1' | 'sha256';
export const CHECKSUM_ALGORITHMS: readonly ChecksumAlgorithm[] = ['crc32', 'crc32c', 'crc64nvme', 'sha1', 'sha256'];

export interface Checksum {
  update(data: Buffer): void;
  /** base64 of the big-endian digest. */
  digest(): string;
}

/** Table of a reflected 32-bit CRC, eight slices deep. */
function crc32Tables(poly: number): Uint32Array[] {
  const tables = Array.from({ length: 8 }, () => new Uint32Array(256));
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ poly : c >>> 1;
    tables[0]![i] = c >>> 0;
  }
  for (let i = 0; i < 256; i++) {
    for (let t = 1; t < 8; t++) tables[t]![i] = (tables[0]![tables[t - 1]![i]! & 0xff]! ^ (tables[t - 1]![i]! >>> 8)) >>> 0;
  }
  return tables;
}

let castagnoli: Uint32Array[] | null = null;

class Crc32c implements Checksum {
  private crc = 0xffffffff;
  private readonly t = (castagnoli ??= crc32Tables(0x82f63b78));

  update(data: Buffer): void {
    const [t0, t1, t2, t3, t4, t5, t6, t7] = this.t as [Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array];
    let c = this.crc;
    let i = 0;
    const end8 = data.length - (data.length % 8);
    for (; i < end8; i += 8) {
      const lo = (c ^ (data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24))) >>> 0;
      c = t7[lo & 0xff]! ^ t6[(lo >>> 8) & 0xff]! ^ t5[(lo >>> 16) & 0xff]! ^ t4[lo >>> 24]!
        ^ t3[data[i + 4]!]! ^ t2[data[i + 5]!]! ^ t1[data[i + 6]!]! ^ t0[data[i + 7]!]!;
    }
    for (; i < data.length; i++) c = t0[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
    this.crc = c >>> 0;
  }

  digest(): string {
    const out = Buffer.alloc(4);
    out.writeUInt32BE((this.crc ^ 0xffffffff) >>> 0);
    return out.toString('base64');
  }
}

class Crc32 implements Checksum {
  private crc = 0;
  update(data: Buffer): void {
    this.crc = crc32(data, this.crc);
  }
  digest(): string {
    const out = Buffer.alloc(4);
    out.writeUInt32BE(this.crc >>> 0);
    return out.toString('base64');
  }
}

/** CRC-64/NVME's table, each entry as its high and low 32 bits. */
let nvme: { hi: Uint32Array; lo: Uint32Array } | null = null;
function nvmeTable(): { hi: Uint32Array; lo: Uint32Array } {
  if (nvme) return nvme;
  const poly = 0x9a6c9329ac4bc9b5n;
  const hi = new Uint32Array(256);
  const lo = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = BigInt(i);
    for (let k = 0; k < 8; k++) c = c & 1n ? (c >> 1n) ^ poly : c >> 1n;
    hi[i] = Number(c >> 32n);
    lo[i] = Number(c & 0xffffffffn);
  }
  return (nvme = { hi, lo });
}

class Crc64Nvme implements Checksum {
  private hi = 0xffffffff;
  private lo = 0xffffffff;
  private readonly t = nvmeTable();

  update(data: Buffer): void {
    const { hi: th, lo: tl } = this.t;
    let hi = this.hi;
    let lo = this.lo;
    for (let i = 0; i < data.length; i++) {
      const idx = (lo ^ data[i]!) & 0xff;
      lo = ((lo >>> 8) | (hi << 24)) ^ tl[idx]!;
      hi = (hi >>> 8) ^ th[idx]!;
    }
    this.hi = hi >>> 0;
    this.lo = lo >>> 0;
  }

  digest(): string {
    const out = Buffer.alloc(8);
    out.writeUInt32BE((this.hi ^ 0xffffffff) >>> 0, 0);
    out.writeUInt32BE((this.lo ^ 0xffffffff) >>> 0, 4);
    return out.toString('base64');
  }
}

class Digest implements Checksum {
  private readonly hash: Hash;
  constructor(algorithm: 'sha1' | 'sha256') {
    this.hash = createHash(algorithm);
  }
  update(data: Buffer): void {
    this.hash.update(data);
  }
  digest(): string {
    return this.hash.digest('base64');
  }
}

export function createChecksum(algorithm: ChecksumAlgorithm): Checksum {
  switch (algorithm) {
    case 'crc32':
      return new Crc32();
    case 'crc32c':
      return new Crc32c();
    case 'crc64nvme':
      return new Crc64Nvme();
    case 'sha1':
    case 'sha256':
      return new Digest(algorithm);
  }
}

/** The algorithm of a header or trailer name such as x-amz-checksum-crc32, or null. */
export function checksumAlgorithmOf(name: string): ChecksumAlgorithm | null {
  const m = /^x-amz-checksum-([a-z0-9]+)$/.exec(name.toLowerCase());
  return m && (CHECKSUM_ALGORITHMS as readonly string[]).includes(m[1]!) ? (m[1] as ChecksumAlgorithm) : null;
}
