/**
 * A tus 1.0 upload as the metadata store keeps it, beside its file record (contract §9). The
 * file record holds what every upload has (size, folder, grant, expiry, the multipart upload);
 * this row holds what tus adds: the kind, the metadata as the client sent it, and the "tail".
 *
 * The tail: bytes of the next part that arrived but do not fill it yet. Parts are 5 MiB (S3's
 * smallest), while a tus client may stop at any offset, so what is past the last whole part
 * is kept as a small object of its own until later bytes complete the part.
 */

/** `single`: an ordinary upload; `partial` / `final`: the concatenation extension's two kinds. */
export type TusKind = 'single' | 'partial' | 'final';

export interface StoredTusUpload {
  file_id: string;
  kind: TusKind;
  /** Upload-Metadata exactly as given at creation, for HEAD; null when none was. */
  metadata: string | null;
  /** A final upload's partial uploads (file ids, space-separated, in order); null otherwise. */
  concat: string | null;
  /** The object holding the tail, and its length; null and 0 when there is none. */
  tail_key: string | null;
  tail_size: number;
  /**
   * A tail object being written and not yet the tail: named here first, so that an origin
   * stopped between writing it and recording it leaves nothing nobody knows of.
   */
  next_tail_key: string | null;
  /** Grows with every change of the upload's offset: writers compare and set it. */
  version: number;
  /** A partial upload whose parts are joined into the object at its file's blob key: 1. */
  joined: number;
  created_at: number;
  /**
   * Who made it: "root", "key:{id}" or "grant:{id}"; a final upload takes only partial uploads
   * of its own caller. Null for uploads made before it was kept (the root's, or their grant's).
   */
  made_by: string | null;
}

/** The object keys of an upload's tail, fresh for each one written. */
export const tailKey = (fileId: string, random: string): string => `tus-tails/${fileId}/${random}`;
