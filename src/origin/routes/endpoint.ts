import type { TSchema, Static } from 'typebox';
import type { CofferService } from '../../service/service.js';
import type { Caller } from '../../core/access.js';

/** One endpoint of the programmatic interface: its schemas document and validate it. */
export interface Endpoint<B extends TSchema = TSchema, R extends TSchema = TSchema> {
  path: string;
  summary: string;
  description?: string;
  tag: 'Upload' | 'Folders' | 'Files' | 'Links' | 'Keys' | 'Webhooks';
  /** Who may call it: keys and sessions (`api`, the default), or upload grants too (`upload`). */
  access?: 'api' | 'upload';
  body: B;
  response: R;
  /** The service decides what the caller may do; the route only hands it over. */
  handle(service: CofferService, body: Static<B>, caller: Caller): Promise<Static<R>>;
}

export const endpoint = <B extends TSchema, R extends TSchema>(e: Endpoint<B, R>): Endpoint => e as unknown as Endpoint;
