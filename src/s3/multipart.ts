/** Multipart uploads (contract §12), on Coffer's upload engine. */
import { s3Errors } from './errors.js';
import type { S3Handler } from './context.js';

const notYet: S3Handler = async () => {
  throw s3Errors.notImplemented('multipart uploads');
};
export const createMultipart = notYet;
export const uploadPart = notYet;
export const uploadPartCopy = notYet;
export const completeMultipart = notYet;
export const abortMultipart = notYet;
export const listParts = notYet;
export const listMultipartUploads = notYet;
