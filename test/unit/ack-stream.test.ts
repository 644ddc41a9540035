/**
 * Streamed acknowledgements (src/feed/ack-stream.ts, src/edge/ack-sender.ts): the lines the
 * origin takes, and a follower whose stream does not work (a proxy that gathers request bodies,
 * an origin without its feed, a stream dropped under it) keeping its lease by requests, on a
 * clock moved by hand (test/helpers/follower-rig.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AckLines, MAX_ACK_LINE, parseAckLine } from '../../src/feed/ack-stream.js';
import { STREAM_RETRY_LEASES } from '../../src/edge/ack-sender.js';
import { followerRig, type FollowerRig, type StreamAcks } from '../helpers/follower-rig.js';

const LEASE = 1000;

describe('acknowledgement lines', () => {
  it('takes whole lines however the bytes are cut, and skips blank ones', () => {
    const lines = new AckLines();
    expect(lines.push('{"n":1,"se')).toEqual([]);
    expect(lines.push('q":4}\n\n{"n":2,"seq":5,"renew":true}\n{"n":3,')).toEqual([{ n: 1, seq: 4, renew: false }, { n: 2, seq: 5, renew: true }]);
    expect(lines.push('"seq":5,"renew":false}\r\n')).toEqual([{ n: 3, seq: 5, renew: false }]);
  });

  it('refuses what is not an acknowledgement', () => {
    for (const bad of ['', 'null', '[]', '"x"', '{"n":1}', '{"n":-1,"seq":0}', '{"n":1.5,"seq":0}', '{"n":1,"seq":1e300}', '{"n":1,"seq":0,"renew":"yes"}', '{"n":"1","seq":0}', '{bad']) {
      expect(parseAckLine(bad), bad).toBeNull();
    }
    expect(() => new AckLines().push('{"n":1,"seq":"0"}\n')).toThrow(/not/);
  });

  it('refuses a line longer than MAX_ACK_LINE, ended or not', () => {
    expect(() => new AckLines().push(`{"n":1,"seq":0,"pad":"${'x'.repeat(MAX_ACK_LINE)}"}\n`)).toThrow(/too long/);
    const lines = new AckLines();
    expect(() => {
      for (let i = 0; i < 10; i++) lines.push('x'.repeat(100));
    }).toThrow(/too long/);
  });
});

describe('a follower whose acknowledgement stream does not work', () => {
  let rig: FollowerRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  /** Passes `leases` leases, counting the moments the follower was not serving. */
  const lapsesOver = async (r: FollowerRig, leases: number): Promise<number> => {
    let lapses = 0;
    await r.pass(leases * LEASE, 10, () => {
      if (!r.follower.serving()) lapses++;
    });
    return lapses;
  };

  /** Publishes a change and passes time until every edge has it; the clock's ms it took. */
  const publish = async (r: FollowerRig): Promise<number> => {
    const seq = await r.append({ type: 'folder.deleted', folder_id: 'x', data: { folder_id: 'x' } });
    const t0 = r.clock.monotonic();
    let done = false;
    const publishing = r.hub.publish(seq).then(() => (done = true));
    await r.until(() => done);
    await publishing;
    return r.clock.monotonic() - t0;
  };

  it.each<[string, StreamAcks]>([
    ['a proxy that holds request bodies until they end', 'buffer'],
    ['an origin without its feed (409)', 'elsewhere'],
  ])('behind %s, starts, keeps its lease and has its changes taken, by requests', async (_name, streamAcks) => {
    rig = await followerRig(LEASE, { streamAcks });
    expect(rig.ackStreams, 'the stream was tried').toBeGreaterThan(0);
    expect(rig.ackRequests, 'then requests').toBeGreaterThan(0);
    expect(await lapsesOver(rig, 5)).toBe(0);
    // Answered by a request at once, not held for the edge's lease to run out.
    expect(await publish(rig)).toBeLessThan(LEASE / 2);
  });

  it('tries the stream again after STREAM_RETRY_LEASES leases', async () => {
    rig = await followerRig(LEASE, { streamAcks: 'elsewhere' });
    const opened = rig.ackStreams;
    await rig.pass((STREAM_RETRY_LEASES - 2) * LEASE, 20);
    expect(rig.ackStreams, 'not before').toBe(opened);
    await rig.pass(4 * LEASE, 20);
    expect(rig.ackStreams, 'tried again').toBeGreaterThan(opened);
  });

  it('goes back to the stream at once when an origin that was slow answers a renewal late', async () => {
    rig = await followerRig(LEASE, { streamAcks: true });
    expect(rig.ackRequests).toBe(0);
    // An origin starved of CPU: renewals go unanswered past half a lease, and requests carry them.
    rig.delayStreamed = true;
    expect(await lapsesOver(rig, 2)).toBe(0);
    expect(rig.ackRequests, 'acknowledged by request meanwhile').toBeGreaterThan(0);
    rig.delayStreamed = false;
    rig.releaseStreamed();
    await rig.pass(LEASE / 10, 5);
    const requests = rig.ackRequests;
    expect(await publish(rig)).toBeLessThan(LEASE / 2);
    expect(await lapsesOver(rig, 3)).toBe(0);
    expect(rig.ackRequests, 'back on the stream, not for STREAM_RETRY_LEASES leases on requests').toBe(requests);
  });

  it('keeps its lease when its stream is dropped again and again, renewals under way or not', async () => {
    rig = await followerRig(LEASE, { streamAcks: true });
    expect(rig.ackRequests).toBe(0);
    let lapses = 0;
    for (let i = 0; i < 8; i++) {
      rig.dropAckStreams();
      lapses += await lapsesOver(rig, 0.5);
    }
    expect(lapses).toBe(0);
    expect(await publish(rig)).toBeLessThan(LEASE / 2);
  });
});
