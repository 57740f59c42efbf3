import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyReply } from 'fastify';
import type { Access } from '../../http/access.ts';
import type { HttpServer } from '../../http/server.ts';
import { AppError } from '../../lib/errors.ts';

const access: Access = { public: true, reason: "The dashboard's static files; its API calls carry their own credentials.", rateLimit: false };

/**
 * The app may talk only to this origin, may not be framed (clickjacking), and shows media the API
 * served as blobs (fetched with the bearer token, so `blob:`). Radix positions popovers with inline
 * styles, hence 'unsafe-inline' for styles only; scripts are the bundle's files alone.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "media-src 'self' blob:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "object-src 'none'",
].join('; ');

/** Vite names every asset by its content hash, so an asset's URL never serves other bytes. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

function secure(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CONTENT_SECURITY_POLICY)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'same-origin')
    .header('x-frame-options', 'DENY');
}

/**
 * `/dashboard/assets/*` are the hashed files (a missing one is a 404, never the app's page, so a
 * stale tab fails loudly rather than running HTML as script); every other path under /dashboard is
 * a route of the single-page app and gets index.html, never cached, so a reload of a deep link works
 * and a new build is picked up on the next visit.
 */
export function registerDashboardRoutes(app: HttpServer, directory: string): void {
  const root = path.resolve(directory);
  const built = () => existsSync(path.join(root, 'index.html'));
  const notBuilt = () =>
    new AppError(
      'service_unavailable',
      'The dashboard is not built: run `node scripts/build-dashboard.ts` (npm start does it when the build tools are installed).',
    );

  void app.register(async (scope) => {
    // preCompressed: the build wrote .br and .gz beside each asset (scripts/build-dashboard.ts).
    await scope.register(fastifyStatic, { root, serve: false, index: false, cacheControl: false, etag: true, lastModified: true, preCompressed: true });

    const page = async (_request: unknown, reply: FastifyReply) => {
      if (!built()) throw notBuilt();
      return secure(reply).header('cache-control', 'no-cache').sendFile('index.html');
    };
    scope.get('/dashboard', { config: { access }, schema: { hide: true }, handler: page });

    scope.get<{ Params: { '*': string } }>('/dashboard/*', {
      config: { access },
      schema: { hide: true },
      handler: async (request, reply) => {
        const file = request.params['*'];
        if (!file.startsWith('assets/')) return page(request, reply);
        if (!built()) throw notBuilt();
        const asset = path.resolve(root, file);
        if (!asset.startsWith(root + path.sep) || !statSync(asset, { throwIfNoEntry: false })?.isFile()) {
          throw new AppError('route_not_found', `No dashboard asset ${file}: reload the page to get the current build.`);
        }
        return secure(reply).header('cache-control', IMMUTABLE).sendFile(path.relative(root, asset));
      },
    });
  });
}
