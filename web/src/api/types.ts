/**
 * The API's types, taken from the server's own schemas (type-only imports: nothing of the server is
 * bundled), so a field renamed on the server fails the dashboard's type-check.
 */
export type { DashboardToken } from '../../../src/modules/auth/auth.schemas.ts';
export type { Connection } from '../../../src/modules/connections/connections.schemas.ts';
export type { Member } from '../../../src/modules/members/members.schemas.ts';
export type { Organization } from '../../../src/modules/organizations/organizations.schemas.ts';
export type { Role, Scope } from '../../../src/modules/credentials/scopes.schemas.ts';
export type { EventEnvelope } from '../../../src/events/envelope.ts';

/** A page of a list endpoint (`ListOf` in src/http/schemas.ts). */
export interface ListPage<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

/** The body of every error answer (src/http/error-envelope.ts). */
export interface ErrorBody {
  type: string;
  code: string;
  message: string;
  param?: string | null;
  details?: unknown;
  retryable?: boolean;
  doc_url: string;
  request_id: string;
  [extra: string]: unknown;
}
