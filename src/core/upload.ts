import { errors } from './errors.js';

/** 5 MiB: the contract's chunk size, and S3's smallest multipart part. */
export const CHUNK_SIZE = 5 * 1024 * 1024;
export const DEFAULT_MAX_FILE_SIZE = 10_000 * CHUNK_SIZE;

export const partCount = (size: number): number => Math.max(1, Math.ceil(size / CHUNK_SIZE));

/** Every part is a full chunk but the last, which holds the rest. */
export function expectedPartSize(size: number, partNumber: number): number {
  const count = partCount(size);
  return partNumber < count ? CHUNK_SIZE : size - (count - 1) * CHUNK_SIZE;
}

export function checkPartNumber(partNumber: number, count: number): void {
  if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > count) {
    throw errors.invalidField('invalid_part_number', 'partNumber',
      `"partNumber" must be an integer from 1 to ${count}.`, { part_count: count });
  }
}

export function checkDeclaredSize(size: number, maxFileSize: number): void {
  // An integer past 2^53 is still a whole number, just over any limit: 413 below, not 400.
  if (!Number.isInteger(size) || size < 0) {
    throw errors.invalidField('invalid_size', 'size', '"size" must be a whole number of bytes, 0 or more.');
  }
  if (size > maxFileSize) throw errors.fileTooLarge(maxFileSize);
}

/** Part numbers from 1 to count that are not in `received`, ascending. */
export function missingParts(count: number, received: Iterable<number>): number[] {
  const have = new Set(received);
  const missing: number[] = [];
  for (let n = 1; n <= count; n++) if (!have.has(n)) missing.push(n);
  return missing;
}

/** The deepest a folder may sit: the root's children are at depth 1. Walks up the tree stop here and fail closed. */
export const MAX_FOLDER_DEPTH = 256;
