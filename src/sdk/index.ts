/**
 * Coffer's SDK: `import { CofferClient, signLink } from 'coffer/sdk'`. Browser-safe:
 * nothing here imports Node modules (Node helpers live in `coffer/sdk/node`).
 */
export { CofferClient, createClient } from './client.js';
export type { AbortUploadResponse, CallOptions, ClientOptions, DeleteFileResponse, PartEncoding, PartTarget, RetryInfo } from './client.js';
export { Limiter, uploadFile } from './upload.js';
export type { ResumeHandle, UploadOptions, UploadProgress, UploadSource } from './upload.js';
export { signLink } from './sign.js';
export { verifyWebhook } from './webhooks.js';
export type { VerifyWebhookOptions, WebhookDelivery } from './webhooks.js';
export type { SignLinkOptions } from './sign.js';
export type { VariantParams, VariantFit, VariantFormat } from '../core/variants.js';
export type { RetryOptions } from './retry.js';
export { CofferError } from '../core/errors.js';
export type { ErrorBody, ErrorDetails } from '../core/errors.js';
export { CLIENT_ERROR_CODES, ERROR_CODES } from '../core/error-codes.js';
export type { ClientErrorCode, ErrorCode } from '../core/error-codes.js';
export { fileTypeFor } from '../core/file-types.js';
export { CHUNK_SIZE, partCount } from '../core/upload.js';
export { FILE_TYPES } from '../core/records.js';
export type { FileType, Visibility } from '../core/records.js';
export type {
  CreateFolderRequest, CreateLinkRequest, CreateLinkResponse, DeleteFolderRequest, DeleteFolderResponse,
  DownloadRequest, DownloadResponse, FileRecord, FolderRecord, InitiateUploadRequest, LinkVariant, ListRequest,
  ListResponse, SearchRequest, SearchResponse, UpdateFileRequest, UpdateFolderRequest, UploadPartRequest,
  UploadPartResponse, UploadSession, UploadStatusResponse,
} from '../core/api.js';
export type {
  CreateGrantRequest, CreateGrantResponse, CreateKeyRequest, CreateKeyResponse, KeyRecord, ListKeysResponse, RevokeKeyResponse,
  RevokeLinksResponse,
} from '../core/api-access.js';
export type {
  CreateWebhookRequest, CreateWebhookResponse, DeliveriesRequest, DeliveriesResponse, DeliveryRecord, ListWebhooksResponse, WebhookRecord,
} from '../core/api-webhooks.js';
export type { FileWithUsage, UsageResponse } from '../core/api-usage.js';
export type { EdgeEntry, EdgeState, EdgesResponse } from '../core/api-edges.js';
