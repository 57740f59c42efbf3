/**
 * The error reference: one page per code of the catalogue at `/docs/errors/{code}` (HTML, or JSON
 * when asked), which every error's `doc_url` points to. Generated from `lib/errors.ts`, so it cannot
 * drift from what the API returns.
 */
import type { Module } from '../module.ts';
import { registerErrorReferenceRoutes } from './error-reference.routes.ts';

export function createErrorReferenceModule(): Module {
  return { name: 'error-reference', service: undefined, routes: (server) => registerErrorReferenceRoutes(server) };
}
