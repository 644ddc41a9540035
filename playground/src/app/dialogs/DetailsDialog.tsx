/** A file's details and every action on it (Enter or a double-click on a file). */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { FileRecord, FileWithUsage } from '../../../../src/sdk/index.js';
import { client } from '../../api.js';
import { errorMessage, formatBytesExact, formatExact, formatSize, TYPE_LABELS } from '../format.js';
import { CopyIcon, DownloadIcon, GlobeIcon, LinkIcon, LinkOffIcon, LockIcon, PencilIcon, TrashIcon } from '../icons.js';
import { RelTime, Thumb, VisibilityBadge } from '../parts.js';
import { Modal } from './Modal.js';
import { screenWidth } from '../thumbs.js';

export type FileAction = 'copy' | 'link' | 'revoke-links' | 'download' | 'rename' | 'visibility' | 'delete';

type Usage = { status: 'loading' } | { status: 'ready'; file: FileWithUsage } | { status: 'error'; message: string };

/** Downloads and bytes served, asked for when the details open: the listing does not carry them. */
function useUsage(fileId: string): Usage {
  const [usage, setUsage] = useState<Usage>({ status: 'loading' });
  useEffect(() => {
    const ac = new AbortController();
    client.getFile(fileId, { signal: ac.signal }).then(
      (file) => setUsage({ status: 'ready', file }),
      (err: unknown) => { if (!ac.signal.aborted) setUsage({ status: 'error', message: errorMessage(err) }); },
    );
    return () => ac.abort();
  }, [fileId]);
  return usage;
}

function UsageFact(props: { usage: Usage }): JSX.Element {
  const u = props.usage;
  if (u.status === 'loading') return <span class="muted">Loading…</span>;
  if (u.status === 'error') return <span class="muted">Not available: {u.message}</span>;
  const { downloads, bytes_served: bytes } = u.file;
  return (
    <span data-testid="file-usage" data-downloads={downloads} data-bytes={bytes}>
      {downloads.toLocaleString('en-US')} {downloads === 1 ? 'download' : 'downloads'} · {formatSize(bytes)} served
      <span class="muted small block">As reported by edges: recent downloads may take a little while to appear.</span>
    </span>
  );
}

export function DetailsDialog(props: { file: FileRecord; now: number; onClose: () => void; onAction: (a: FileAction) => void }): JSX.Element {
  const f = props.file;
  const priv = f.effective_visibility === 'Private';
  const usage = useUsage(f.file_id);
  const row = (label: string, value: JSX.Element | string) => (
    <div class="fact"><dt>{label}</dt><dd>{value}</dd></div>
  );
  return (
    <Modal title={f.name} onClose={props.onClose} size="large" testId="details-dialog"
      description={<>{TYPE_LABELS[f.file_type] ?? 'File'} · {formatSize(f.size)}</>}
    >
      <div class="details">
        <div class="details-preview"><Thumb key={`${f.file_id}|${f.effective_visibility}|${f.updated_at}`} file={f} root={null} width={screenWidth()} /></div>
        <div class="details-side">
          <div class="details-actions">
            <button type="button" class="btn btn-primary" onClick={() => props.onAction('download')} data-autofocus><DownloadIcon /><span>Download</span></button>
            {priv
              ? <button type="button" class="btn" onClick={() => props.onAction('link')}><LinkIcon /><span>Signed link</span></button>
              : <button type="button" class="btn" onClick={() => props.onAction('copy')}><CopyIcon /><span>Copy URL</span></button>}
            <button type="button" class="btn" onClick={() => props.onAction('revoke-links')}><LinkOffIcon /><span>Revoke links</span></button>
            <button type="button" class="btn" onClick={() => props.onAction('rename')}><PencilIcon /><span>Rename</span></button>
            <button type="button" class="btn" onClick={() => props.onAction('visibility')}>
              {f.visibility === 'Private' ? <GlobeIcon /> : <LockIcon />}<span>{f.visibility === 'Private' ? 'Make Public' : 'Make Private'}</span>
            </button>
            <button type="button" class="btn btn-danger-ghost" onClick={() => props.onAction('delete')}><TrashIcon /><span>Delete</span></button>
          </div>
          <dl class="facts">
            {row('Visibility', <VisibilityBadge visibility={f.visibility} effective={f.effective_visibility} />)}
            {row('Size', `${formatSize(f.size)} (${formatBytesExact(f.size)})`)}
            {row('Type', `${TYPE_LABELS[f.file_type] ?? f.file_type} · ${f.content_type}`)}
            {row('Modified', <><RelTime iso={f.updated_at} now={props.now} /> <span class="muted small">{formatExact(f.updated_at)}</span></>)}
            {row('Uploaded', <span>{formatExact(f.created_at)}</span>)}
            {row('Usage', <UsageFact usage={usage} />)}
            {row('File ID', <code class="mono break">{f.file_id}</code>)}
            {f.sha256 && row('SHA-256', <code class="mono break small">{f.sha256}</code>)}
            {f.delivery_url && row('Delivery URL', <span class="break mono small">{f.delivery_url}{priv && <span class="muted"> (needs a signed link)</span>}</span>)}
          </dl>
        </div>
      </div>
    </Modal>
  );
}
