/**
 * Bytes served per day over the last 30 days, as edges have reported them: a small bar
 * chart drawn by hand in SVG (named and described for screen readers) with the same
 * numbers as a table beneath.
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { UsageResponse } from '../../../src/sdk/index.js';
import { client } from '../api.js';
import { errorMessage, formatSize } from './format.js';
import './usage.css';

const DAYS = 30;
const W = 600;
const H = 60;
const GAP = 4;

type Day = UsageResponse['days'][number];
type State = { status: 'loading' } | { status: 'ready'; days: Day[] } | { status: 'error'; message: string };

const dayLabel = (date: string) => new Date(`${date}T00:00:00Z`).toLocaleDateString('en-US', { month: 'short', day: 'numeric', timeZone: 'UTC' });

export function UsageChart(): JSX.Element {
  const [state, setState] = useState<State>({ status: 'loading' });
  useEffect(() => {
    const ac = new AbortController();
    client.usage({ days: DAYS }, { signal: ac.signal }).then(
      ({ days }) => setState({ status: 'ready', days }),
      (err: unknown) => { if (!ac.signal.aborted) setState({ status: 'error', message: errorMessage(err) }); },
    );
    return () => ac.abort();
  }, []);

  if (state.status !== 'ready') {
    return (
      <section class="usage" aria-labelledby="usage-title" data-testid="usage-chart" data-state={state.status}>
        <h2 id="usage-title" class="usage-title">Bytes served, last {DAYS} days</h2>
        <p class="usage-sum muted">{state.status === 'loading' ? 'Loading…' : `Not available: ${state.message}`}</p>
      </section>
    );
  }

  const days = state.days;
  const total = days.reduce((n, d) => n + d.bytes, 0);
  const downloads = days.reduce((n, d) => n + d.downloads, 0);
  const max = Math.max(1, ...days.map((d) => d.bytes));
  const busiest = days.reduce((a, d) => (d.bytes > a.bytes ? d : a), days[0]!);
  const slot = W / days.length;
  const range = days.length ? `${dayLabel(days[0]!.date)} to ${dayLabel(days[days.length - 1]!.date)}` : '';
  const desc = total === 0
    ? `Nothing was served from ${range}.`
    : `${formatSize(total)} in ${downloads.toLocaleString('en-US')} downloads from ${range}; the busiest day was ${dayLabel(busiest.date)} with ${formatSize(busiest.bytes)}.`;

  return (
    <section class="usage" aria-labelledby="usage-title" data-testid="usage-chart" data-state="ready">
      <div class="usage-head">
        <h2 id="usage-title" class="usage-title">Bytes served, last {DAYS} days</h2>
        <p class="usage-sum" data-testid="usage-total">
          <strong>{formatSize(total)}</strong> · {downloads.toLocaleString('en-US')} {downloads === 1 ? 'download' : 'downloads'}
          <span class="muted"> · as reported by edges</span>
        </p>
      </div>
      <svg class="usage-svg" viewBox={`0 0 ${W} ${H}`} preserveAspectRatio="none" role="img" aria-labelledby="usage-svg-title usage-svg-desc">
        <title id="usage-svg-title">Bytes served per day, {range}</title>
        <desc id="usage-svg-desc">{desc}</desc>
        <line class="usage-axis" x1={0} y1={H - 0.5} x2={W} y2={H - 0.5} />
        {days.map((d, i) => {
          if (d.bytes === 0) return null;
          // Every day with bytes stays visible, however small beside the busiest.
          const h = Math.max(2, (d.bytes / max) * (H - 2));
          return (
            <rect key={d.date} class="usage-bar" x={i * slot + GAP / 2} y={H - h} width={slot - GAP} height={h} rx={1.5}
              data-testid="usage-bar" data-date={d.date} data-bytes={d.bytes}>
              <title>{dayLabel(d.date)}: {formatSize(d.bytes)}, {d.downloads} {d.downloads === 1 ? 'download' : 'downloads'}</title>
            </rect>
          );
        })}
      </svg>
      <div class="usage-scale" aria-hidden="true"><span>{days[0] ? dayLabel(days[0].date) : ''}</span><span>Today (UTC)</span></div>
      <details class="usage-details">
        <summary>Show as a table</summary>
        <table class="usage-table" data-testid="usage-table">
          <caption class="sr-only">Downloads and bytes served per day (UTC), oldest first</caption>
          <thead><tr><th scope="col">Day</th><th scope="col">Downloads</th><th scope="col">Bytes served</th></tr></thead>
          <tbody>
            {days.map((d) => (
              <tr key={d.date} data-date={d.date}>
                <th scope="row">{d.date}</th><td>{d.downloads.toLocaleString('en-US')}</td><td>{formatSize(d.bytes)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </section>
  );
}
