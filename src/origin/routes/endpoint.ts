import type { TSchema, Static } from 'typebox';
import type { CofferService } from '../../service/service.js';

/** One endpoint of the programmatic interface: its schemas document and validate it. */
export interface Endpoint<B extends TSchema = TSchema, R extends TSchema = TSchema> {
  path: string;
  summary: string;
  description?: string;
  tag: 'Upload' | 'Folders' | 'Files' | 'Links';
  body: B;
  response: R;
  handle(service: CofferService, body: Static<B>): Promise<Static<R>>;
}

export const endpoint = <B extends TSchema, R extends TSchema>(e: Endpoint<B, R>): Endpoint => e as unknown as Endpoint;
