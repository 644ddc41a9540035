/**
 * The origin's request log at `info` holds what people and applications asked for and every
 * failure; what edges send by themselves (feed polls, acknowledgements, usage reports, fills)
 * and metrics scrapes are at `debug` while they succeed.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { waitFor } from '../kit/index.js';

interface RequestLine {
  level: number;
  url: string;
  status: number;
}

const INFO = 30;
const DEBUG = 20;

/** The origin's per-request lines. */
const requestLines = (o: TestOrigin): RequestLine[] =>
  o.logs.map((l) => JSON.parse(l) as RequestLine & { msg?: string }).filter((l) => l.msg === 'request');

/** An origin, an edge following it, a file the edge has served, and a metrics scrape. */
async function fleetTraffic(logLevel: string): Promise<{ o: TestOrigin; edge: TestEdge }> {
  const o = await startTestOrigin({ COFFER_LOG_LEVEL: logLevel });
  const edge = await startTestEdge(o);
  const file = await uploadBytes(o, Buffer.from('logged once'), { name: 'log.txt' });
  await waitFor(async () => (await fetch(`${edge.edge.url}/files/${file.file_id}`)).status === 200, { timeoutMs: 10_000 });
  expect((await fetch(`${o.url}/metrics`)).status).toBe(200);
  return { o, edge };
}

describe('the origin\'s request log', () => {
  const running: Array<{ o: TestOrigin; edge: TestEdge }> = [];
  afterEach(async () => {
    for (const r of running.splice(0)) {
      await r.edge.close();
      await r.o.close();
    }
  });

  test('at info: the application\'s calls and failures, no edge acks, feed polls, fills or scrapes', async () => {
    const fleet = await fleetTraffic('info');
    running.push(fleet);
    const { o } = fleet;
    const refused = await fetch(`${o.url}/_edge/feed?after=0&edge=intruder`, { headers: { authorization: 'Bearer not-the-token' } });
    expect(refused.status).toBe(401);
    await refused.arrayBuffer();
    await waitFor(() => requestLines(o).some((l) => l.status === 401), { timeoutMs: 10_000 });

    const lines = requestLines(o);
    expect(lines.every((l) => l.level === INFO)).toBe(true);
    expect(lines.map((l) => l.url)).toContain('/collections/upload/complete-upload');
    const routine = lines.filter((l) => l.url.startsWith('/_edge/') || l.url === '/metrics');
    // Only the refused edge request, which an operator acts on.
    expect(routine, JSON.stringify(routine)).toEqual([expect.objectContaining({ url: '/_edge/feed?after=0&edge=intruder', status: 401 })]);
  });

  test('at debug: the edges\' traffic and the scrapes too', async () => {
    const fleet = await fleetTraffic('debug');
    running.push(fleet);
    const { o } = fleet;
    await waitFor(() => requestLines(o).some((l) => l.url === '/_edge/snapshot'), { timeoutMs: 10_000 });
    const lines = requestLines(o);
    for (const url of ['/_edge/snapshot', '/metrics']) {
      expect(lines.find((l) => l.url === url), url).toMatchObject({ level: DEBUG, status: 200 });
    }
    expect(lines.filter((l) => l.url.startsWith('/_edge/')).every((l) => l.level === DEBUG)).toBe(true);
    expect(lines.find((l) => l.url === '/collections/upload/complete-upload')?.level).toBe(INFO);
  });
});
