import { describe, expect, it } from 'vitest';
import { newId } from '../../src/core/ids.js';

describe('newId', () => {
  it('is 22 base64url characters, unique, and never starts with "-"', () => {
    // With 1 in 64 ids starting with "-" when drawn plainly, 20,000 draws would show one.
    const ids = Array.from({ length: 20_000 }, newId);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.some((id) => id.startsWith('_'))).toBe(true);
  });
});
