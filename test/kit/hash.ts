/** The hex SHA-256 of bytes or a string, as file records and edges' ETags carry it. */
import { createHash } from 'node:crypto';

export const sha256 = (data: Uint8Array | string): string => createHash('sha256').update(data).digest('hex');
