/**
 * Messages between the upload manager (page) and the upload worker. Files travel by
 * structured clone: the worker gets a handle to the same bytes, never a copy read on the
 * page, and reads slices of it itself.
 */
import type { FileRecord } from '../../../src/sdk/index.js';

export type Visibility = 'Public' | 'Private';

/** Page → worker. */
export type ToWorker =
  | {
    type: 'start';
    id: string;
    file: File;
    folderId: string | null;
    visibility: Visibility;
    /** The session's CSRF token (the cookie itself never leaves the browser's jar). */
    csrf: string | null;
    /** Use and keep a resume handle for this file (false when the same file is already uploading on this page). */
    resumable: boolean;
  }
  /** Stop sending, discard the upload on the service and forget its resume handle. */
  | { type: 'cancel'; id: string };

/** Worker → page. */
export type FromWorker =
  /** The upload is open: `resumed` when it continues one the service already had parts of. */
  | { type: 'started'; id: string; fileId: string; resumed: boolean; loaded: number }
  /** Bytes sent so far (acknowledged parts plus the bytes of parts in flight), at most ten times a second, and twice a second while nothing moves. */
  | { type: 'progress'; id: string; loaded: number }
  | { type: 'done'; id: string; record: FileRecord }
  /** `message` is the service's own message when it answered with an error. */
  | { type: 'failed'; id: string; message: string; code: string; status: number }
  | { type: 'canceled'; id: string };
