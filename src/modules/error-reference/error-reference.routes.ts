import Type from 'typebox';
import { AppError, ERROR_CODES, ERROR_TYPES, type ErrorCode } from '../../lib/errors.ts';
import type { HttpServer } from '../../http/server.ts';
import { escapeHtml, htmlPage as page } from '../../lib/html.ts';

// Inline `code` spans of the catalogue's descriptions.
const inline = (text: string) => escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>');

function entry(code: ErrorCode) {
  const definition = ERROR_CODES[code];
  return { code, ...definition, type_description: ERROR_TYPES[definition.type] };
}

export function registerErrorReferenceRoutes(app: HttpServer): void {
  const access = { public: true as const, reason: 'Public documentation.', rateLimit: false as const };
  const wantsJson = (accept: string | undefined) => (accept ?? '').includes('application/json');

  app.get('/docs/errors', {
    config: { access },
    schema: { hide: true },
    handler: async (request, reply) => {
      const codes = Object.keys(ERROR_CODES) as ErrorCode[];
      if (wantsJson(request.headers.accept)) return { object: 'list', data: codes.map(entry) };
      const rows = codes
        .map(
          (code) =>
            `<tr><td><a href="/docs/errors/${code}"><code>${code}</code></a></td><td>${ERROR_CODES[code].status}</td><td><code>${ERROR_CODES[code].type}</code></td><td>${escapeHtml(ERROR_CODES[code].title)}</td></tr>`,
        )
        .join('');
      return reply
        .type('text/html; charset=utf-8')
        .send(page('Error codes', `<h1>Error codes</h1><table><tr><th>Code</th><th>Status</th><th>Type</th><th></th></tr>${rows}</table>`));
    },
  });

  app.get('/docs/errors/:code', {
    config: { access },
    schema: { hide: true, params: Type.Object({ code: Type.String({ maxLength: 64 }) }, { additionalProperties: false }) },
    handler: async (request, reply) => {
      const code = request.params.code;
      if (!Object.hasOwn(ERROR_CODES, code)) throw new AppError('resource_not_found', `No error code ${code}.`, { param: '/path/code' });
      const e = entry(code as ErrorCode);
      if (wantsJson(request.headers.accept)) return e;
      return reply.type('text/html; charset=utf-8').send(
        page(
          `${e.code} – ${e.title}`,
          `<p><a href="/docs/errors">All error codes</a></p><h1><code>${e.code}</code></h1><p><strong>${escapeHtml(e.title)}</strong></p>
<table><tr><th>HTTP status</th><td>${e.status}</td></tr><tr><th>Type</th><td><code>${e.type}</code>: ${inline(e.type_description)}</td></tr>
<tr><th>Retryable</th><td>${e.retryable ? 'yes: the same request can succeed later' : 'no: change the request first'}</td></tr></table>
<h2>What it means</h2><p>${inline(e.description)}</p><h2>What to do</h2><p>${inline(e.resolution)}</p>`,
        ),
      );
    },
  });
}
