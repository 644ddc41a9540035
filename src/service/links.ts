/** Signed links (contract §6) and download links for ready files. */
import { errors } from '../core/errors.js';
import { isoTime, parseFileType, type FileType } from '../core/records.js';
import { DEFAULT_EXPIRY_SECONDS, MAX_EXPIRY_SECONDS, deliveryPath, signPath } from '../core/signing.js';
import { nodeHmac } from '../core/hmac-node.js';
import type { StoredFile } from '../core/ports.js';
import type { RevokeLinksResponse } from '../core/api-access.js';
import { fileEventData } from './records.js';
import { sourceFormat, variantQuery } from '../core/variants.js';
import type { LinkVariant, CreateLinkRequest, CreateLinkResponse, DownloadRequest, DownloadResponse, FileRecord } from '../core/api.js';
import type { ServiceContext } from './context.js';
import type { Caller } from '../core/access.js';
import { authorize } from './policy.js';

function checkExpiry(expiry: number | undefined): number {
  if (expiry === undefined) return DEFAULT_EXPIRY_SECONDS;
  if (!Number.isInteger(expiry) || expiry < 1 || expiry > MAX_EXPIRY_SECONDS) {
    throw errors.invalidField('invalid_expiry', 'expiry', `"expiry" must be a whole number of seconds from 1 to ${MAX_EXPIRY_SECONDS}.`);
  }
  return expiry;
}

/** The variant's parameters to sign (contract §13), checked like an edge checks them. */
function checkVariant(variant: LinkVariant, contentType: string): Record<string, string> {
  if (!sourceFormat(contentType)) {
    throw errors.invalidField('not_an_image', 'variant', 'Variants are made of JPEG, PNG, WebP, AVIF, GIF and TIFF images only; this file is none of them.');
  }
  const checked = variantQuery(variant);
  if ('problem' in checked) throw errors.invalidField('invalid_variant', `variant.${checked.problem.field}`, checked.problem.message);
  return checked.query;
}

export class Links {
  constructor(private readonly c: ServiceContext) {}

  private async readyFile(caller: Caller, fileId: string): Promise<{ file: StoredFile; record: FileRecord }> {
    authorize(caller, 'file.read');
    const file = await this.c.requireFileFor(this.c.meta.read, caller, fileId);
    if (file.status !== 'ready') throw errors.uploadNotComplete(fileId);
    return { file, record: await this.c.toFileRecord(this.c.meta.read, file) };
  }

  private sign(fileId: string, expiresIn: number, params?: Record<string, string>) {
    const path = deliveryPath(fileId);
    const now = this.c.now();
    const signed = signPath(path, this.c.opts.signingSecrets[0]!, { expiresIn, now: Math.floor(now / 1000), issuedAtMs: now, ...(params ? { params } : {}) }, nodeHmac);
    return { url: this.c.cdnUrl + signed.pathAndQuery, expiresAt: isoTime(signed.expires * 1000) };
  }

  async create(caller: Caller, req: CreateLinkRequest): Promise<CreateLinkResponse> {
    const { file } = await this.readyFile(caller, req.file_id);
    let fileType: FileType;
    try {
      fileType = parseFileType(req.file_type);
    } catch {
      fileType = req.file_type as FileType;
    }
    if (fileType !== file.file_type) {
      throw errors.invalidField('file_type_mismatch', 'file_type', `"file_type" must be the file's own type, "${file.file_type}".`, { expected: file.file_type });
    }
    const expiry = checkExpiry(req.expiry);
    // A preview is signed along, so a link cannot be turned into one after it is made.
    const params = { ...(req.variant ? checkVariant(req.variant, file.content_type) : {}), ...(req.preview === true ? { preview: '1' } : {}) };
    const link = this.sign(file.id, expiry, Object.keys(params).length ? params : undefined);
    return { file_id: file.id, file_type: file.file_type, expiry, presigned_url: link.url, expires_at: link.expiresAt };
  }

  async download(caller: Caller, req: DownloadRequest): Promise<DownloadResponse> {
    const { file, record } = await this.readyFile(caller, req.file_id);
    const expiry = checkExpiry(req.expiry);
    if (record.effective_visibility === 'Public') {
      return { file_id: file.id, download_url: `${this.c.cdnUrl}${deliveryPath(file.id)}?download=1`, expires_at: null };
    }
    const link = this.sign(file.id, expiry, { download: '1' });
    return { file_id: file.id, download_url: link.url, expires_at: link.expiresAt };
  }

  /**
   * Revokes every link issued for the file so far (contract §10): links carry their issue
   * time, and edges refuse those issued at or before this one. Answered once every live edge
   * has the change, and only after the clock has moved past it, so a link made afterwards works.
   */
  async revokeLinks(caller: Caller, fileId: string): Promise<RevokeLinksResponse> {
    authorize(caller, 'file.revoke-links');
    const { at, seq } = await this.c.meta.transaction(async (tx) => {
      const file = await this.c.requireFileFor(tx, caller, fileId, 'update');
      const at = this.c.now();
      await tx.updateFile(file.id, { links_revoked_at: at });
      if (file.status !== 'ready') return { at, seq: 0 };
      const updated: StoredFile = { ...file, links_revoked_at: at };
      const data = fileEventData(updated, await this.c.folderContext(tx, file.folder_id));
      return { at, seq: await tx.appendEvent({ type: 'file.updated', file_id: file.id, folder_id: file.folder_id, data }, at) };
    });
    if (seq) await this.c.publish(seq);
    while (this.c.now() <= at) await new Promise((resolve) => setTimeout(resolve, 1));
    return { file_id: fileId, links_revoked_at: isoTime(at) };
  }
}
