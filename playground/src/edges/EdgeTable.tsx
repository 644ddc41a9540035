/** The edges as a table: where each fills from, whether it answers, how far behind it is, its cache and traffic. */
import type { JSX } from 'preact';
import { formatBytesExact, formatExact, formatSize } from '../app/format.js';
import type { EdgeEntry } from '../../../src/sdk/index.js';

const STATE_TEXT: Record<EdgeEntry['state'], string> = {
  live: 'Live',
  catching_up: 'Catching up',
  lapsed: 'Not answering',
  unreachable: 'Not answering',
};

const STATE_TITLE: Record<EdgeEntry['state'], string> = {
  live: 'Holds its lease and reports every 10 s',
  catching_up: 'Heard from; applying the feed before it holds a lease',
  lapsed: 'Its lease ran out: changes no longer wait for it, and it serves nothing from its cache until it catches up',
  unreachable: 'Its reports stopped: nothing heard for more than 30 s',
};

/** "12 s ago", "4 min ago": seconds count here, where "just now" would hide a stopped edge. */
export function seenText(iso: string, now: number): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (!Number.isFinite(s)) return iso;
  if (s < 120) return `${s} s ago`;
  if (s < 7200) return `${Math.round(s / 60)} min ago`;
  return `${Math.round(s / 3600)} h ago`;
}

const count = (n: number | null) => (n === null ? '—' : n.toLocaleString('en-US'));

function Cache(props: { e: EdgeEntry }): JSX.Element {
  const { cache_used_bytes: used, cache_capacity_bytes: cap } = props.e;
  if (used === null || cap === null) return <span class="muted">—</span>;
  const share = cap > 0 ? Math.min(1, used / cap) : 0;
  return (
    <span class="edge-cache" title={`${formatBytesExact(used)} of ${formatBytesExact(cap)}`}>
      <span class="edge-cache-text">{formatSize(used)} / {formatSize(cap)}</span>
      <span class="edge-cache-bar" aria-hidden="true"><span style={{ width: `${(share * 100).toFixed(1)}%` }} /></span>
    </span>
  );
}

function Parent(props: { parents: string[] }): JSX.Element {
  const [first, ...rest] = props.parents;
  if (first === undefined) return <span class="muted">Origin</span>;
  return (
    <span class="edge-parent" title={props.parents.join('\n')}>
      <span class="edge-parent-text">{first}</span>
      {rest.length > 0 && <span class="edge-more">+{rest.length}</span>}
    </span>
  );
}

export function EdgeTable(props: { edges: EdgeEntry[]; now: number }): JSX.Element {
  return (
    <div class="keys-scroll">
      <table class="keys-table edges-table" data-testid="edges-table">
        <caption class="sr-only">Edges, by name</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Parent</th>
            <th scope="col">State</th>
            <th scope="col">Last seen</th>
            <th scope="col" class="num">Feed lag</th>
            <th scope="col">Cache</th>
            <th scope="col" class="num">Hit ratio</th>
            <th scope="col" class="num">Requests</th>
            <th scope="col" class="num">Sent</th>
          </tr>
        </thead>
        <tbody>
          {props.edges.map((e) => (
            <tr key={e.id} class={'edge-row' + (e.answering ? '' : ' down')} data-testid="edge-row" data-edge-id={e.id} data-state={e.state}>
              <th scope="row" class="key-name">
                <span class="key-name-text" title={e.name} data-testid="edge-name">{e.name}</span>
                <code class="key-id" title="The edge's feed id">{e.id}</code>
              </th>
              <td><Parent parents={e.parents} /></td>
              <td class="key-state">
                <span class={'edge-badge ' + (e.answering ? e.state : 'down')} title={STATE_TITLE[e.state]} data-testid="edge-state">
                  <span class="dot" aria-hidden="true" />{STATE_TEXT[e.state]}
                </span>
                {!e.answering && <span class="key-when">{e.state === 'lapsed' ? 'lease lapsed' : 'no reports'}</span>}
              </td>
              <td class="key-time">
                <time dateTime={e.last_seen_at} title={formatExact(e.last_seen_at)} data-testid="edge-seen">{seenText(e.last_seen_at, props.now)}</time>
              </td>
              <td class="num" title={`Applied event ${e.applied_seq}`}>{e.feed_lag_events.toLocaleString('en-US')}</td>
              <td><Cache e={e} /></td>
              <td class="num" data-testid="edge-hits">{e.hit_ratio === null ? <span class="muted">—</span> : `${(e.hit_ratio * 100).toFixed(1)}%`}</td>
              <td class="num">{count(e.requests)}</td>
              <td class="num" title={e.bytes_sent === null ? undefined : formatBytesExact(e.bytes_sent)}>{e.bytes_sent === null ? '—' : formatSize(e.bytes_sent)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
