/**
 * The error reference: one page per code of the catalogue at `/docs/errors/{code}` (HTML, or JSON
 * when asked), which every error's `doc_url` points to. Generated from `lib/errors.ts`, so it cannot
 * drift from what the API returns.
 */
import type { HttpServer } from '../../http/server.ts';
import { registerErrorReferenceRoutes } from './error-reference.routes.ts';

export function createErrorReferenceModule() {
  return { registerRoutes: (app: HttpServer) => registerErrorReferenceRoutes(app) };
}
