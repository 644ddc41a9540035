import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';

describe('origin smoke', () => {
  let o: TestOrigin;
  beforeAll(async () => { o = await startTestOrigin(); });
  afterAll(async () => { await o.close(); });

  it('uploads a multi-part file and reports its SHA-256', async () => {
    const bytes = Buffer.alloc(5 * 1024 * 1024 + 123, 7);
    const rec = await uploadBytes(o, bytes);
    expect(rec.status).toBe('ready');
    expect(rec.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
  });
});
