import type { Generated } from 'kysely';
import type { StoredGrant, StoredKey } from '../../core/access.js';
import type { StoredDelivery, StoredWebhook } from '../../core/webhooks.js';
import type { UsageRow } from '../../core/ports.js';
import type { StoredTusUpload } from '../../core/tus.js';
import type { EdgeLease, EdgeReportRow, S3Upload, StoredFile, StoredFolder, StoredPart, StoredSession } from '../../core/ports.js';

export interface EventsTable {
  seq: Generated<number>;
  type: string;
  file_id: string | null;
  folder_id: string | null;
  data: string;
  created_at: number;
}

export interface BlobTrashTable {
  id: Generated<number>;
  bucket: string;
  blob_key: string;
  upload_id: string | null;
  object: number;
  created_at: number;
}

export interface Database {
  folders: StoredFolder;
  files: StoredFile;
  parts: StoredPart;
  events: EventsTable;
  blob_trash: BlobTrashTable;
  sessions: StoredSession;
  edge_leases: EdgeLease;
  edge_reports: EdgeReportRow;
  access_keys: StoredKey;
  upload_grants: StoredGrant;
  webhooks: StoredWebhook;
  webhook_deliveries: StoredDelivery;
  file_usage: UsageRow;
  tus_uploads: StoredTusUpload;
  s3_uploads: S3Upload;
}
