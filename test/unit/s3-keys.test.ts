/**
 * How an S3 key meets the folder tree (src/s3/mapping.ts; docs/s3.md, "Keys and folders"): a key
 * ending in "/" is its folders and the empty name, which only the S3 interface may give; keys a
 * tree cannot hold as they are are refused, never escaped.
 */
import { describe, expect, test } from 'vitest';
import { FOLDER_KEY_NAME, validateFileName, validateName } from '../../src/core/names.js';
import { parseKey } from '../../src/s3/mapping.js';

describe('parseKey', () => {
  test('a key is its folders and its last segment; one ending in "/" has the empty name and says so', () => {
    expect(parseKey('a/b/c.txt')).toEqual({ key: 'a/b/c.txt', folders: ['a', 'b'], name: 'c.txt', folderKey: false });
    expect(parseKey('a/')).toEqual({ key: 'a/', folders: ['a'], name: FOLDER_KEY_NAME, folderKey: true });
    expect(parseKey('a/b/')).toEqual({ key: 'a/b/', folders: ['a', 'b'], name: '', folderKey: true });
    // The folders and the name spell the key again, whatever it ends with.
    for (const key of ['a', 'a/', 'a/b', 'a/b/', 'x y/é/']) {
      const p = parseKey(key);
      expect([...p.folders, p.name].join('/')).toBe(key);
    }
  });

  test('an empty segment, white space at an end, "." and ".." are refused with InvalidArgument', () => {
    for (const key of ['a//b', '/a', '//', 'a//', ' ', 'a/ /b', 'a /b', 'd/ ', './a', 'a/../b', 'a/..']) {
      expect(() => parseKey(key), key).toThrow(expect.objectContaining({ code: 'InvalidArgument' }));
    }
  });
});

describe('validateFileName', () => {
  test('the empty name passes only where the S3 interface gives it; every other name follows validateName', () => {
    expect(validateFileName('', true)).toBe('');
    expect(() => validateFileName('', false)).toThrow(/empty/);
    expect(() => validateName('')).toThrow(/empty/);
    expect(() => validateFileName('   ', true)).toThrow(/empty/);
    expect(validateFileName(' x.txt ', false)).toBe('x.txt');
    expect(() => validateFileName('..', true)).toThrow();
  });
});
