/** Signed links (contract §6) and download links for ready files. */
import { errors } from '../core/errors.js';
import { isoTime, parseFileType, type FileType } from '../core/records.js';
import { DEFAULT_EXPIRY_SECONDS, MAX_EXPIRY_SECONDS, deliveryPath, signPath } from '../core/signing.js';
import { nodeHmac } from '../core/hmac-node.js';
import type { StoredFile } from '../core/ports.js';
import type { CreateLinkRequest, CreateLinkResponse, DownloadRequest, DownloadResponse, FileRecord } from '../core/api.js';
import type { ServiceContext } from './context.js';

function checkExpiry(expiry: number | undefined): number {
  if (expiry === undefined) return DEFAULT_EXPIRY_SECONDS;
  if (!Number.isInteger(expiry) || expiry < 1 || expiry > MAX_EXPIRY_SECONDS) {
    throw errors.invalidField('invalid_expiry', 'expiry', `"expiry" must be a whole number of seconds from 1 to ${MAX_EXPIRY_SECONDS}.`);
  }
  return expiry;
}

export class Links {
  constructor(private readonly c: ServiceContext) {}

  private async readyFile(fileId: string): Promise<{ file: StoredFile; record: FileRecord }> {
    const file = await this.c.requireFile(this.c.meta.read, fileId);
    if (file.status !== 'ready') throw errors.uploadNotComplete(fileId);
    return { file, record: await this.c.toFileRecord(this.c.meta.read, file) };
  }

  private sign(fileId: string, expiresIn: number, params?: Record<string, string>) {
    const path = deliveryPath(fileId);
    const signed = signPath(path, this.c.opts.signingSecrets[0]!, { expiresIn, now: Math.floor(this.c.now() / 1000), ...(params ? { params } : {}) }, nodeHmac);
    return { url: this.c.opts.cdnUrl + signed.pathAndQuery, expiresAt: isoTime(signed.expires * 1000) };
  }

  async create(req: CreateLinkRequest): Promise<CreateLinkResponse> {
    const { file } = await this.readyFile(req.file_id);
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
    const link = this.sign(file.id, expiry);
    return { file_id: file.id, file_type: file.file_type, expiry, presigned_url: link.url, expires_at: link.expiresAt };
  }

  async download(req: DownloadRequest): Promise<DownloadResponse> {
    const { file, record } = await this.readyFile(req.file_id);
    const expiry = checkExpiry(req.expiry);
    if (record.effective_visibility === 'Public') {
      return { file_id: file.id, download_url: `${this.c.opts.cdnUrl}${deliveryPath(file.id)}?download=1`, expires_at: null };
    }
    const link = this.sign(file.id, expiry, { download: '1' });
    return { file_id: file.id, download_url: link.url, expires_at: link.expiresAt };
  }
}
