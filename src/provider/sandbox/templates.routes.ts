import { GraphError, unknownObject } from './graph-errors.ts';
import { bodyObject, pickFields, type GraphDeps, type GraphRouter, type Json } from './graph-http.ts';
import { TEMPLATE_STATUSES, templateNode, type SandboxTemplate } from './templates.ts';

const DEFAULT_LIMIT = 25;
const MAX_LIMIT = 1000;

function encodeCursor(id: string): string {
  return Buffer.from(id).toString('base64url');
}

function decodeCursor(cursor: unknown, param: string): string {
  if (typeof cursor !== 'string' || cursor === '') throw new GraphError(100, `Param ${param} must be a cursor from paging.cursors.`);
  return Buffer.from(cursor, 'base64url').toString('utf8');
}

function optionalString(query: Json, key: string): string | undefined {
  const value = query[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw new GraphError(100, `Param ${key} must be a non-empty string.`);
  return value;
}

/**
 * One page of a list in Graph's cursor style: `after` continues past an item, `before` returns the
 * items just ahead of one; the cursors name the page's first and last items.
 */
function page(all: SandboxTemplate[], query: Json, url: URL): Json {
  let limit = DEFAULT_LIMIT;
  if (query.limit !== undefined) {
    limit = Number(query.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new GraphError(100, `Param limit must be an integer from 1 to ${MAX_LIMIT}.`);
  }
  let start = 0;
  if (query.after !== undefined) {
    const id = decodeCursor(query.after, 'after');
    start = all.findIndex((template) => template.id === id) + 1;
  } else if (query.before !== undefined) {
    const id = decodeCursor(query.before, 'before');
    const stop = Math.max(
      0,
      all.findIndex((template) => template.id === id),
    );
    start = Math.max(0, stop - limit);
    limit = stop - start;
  }
  const items = all.slice(start, start + limit);
  const fields = query.fields;
  const data = items.map((template) => pickFields(templateNode(template), fields));
  const first = items[0];
  const last = items.at(-1);
  if (first === undefined || last === undefined) return { data };
  const link = (key: 'after' | 'before', cursor: string): string => {
    const next = new URL(url);
    next.searchParams.delete('after');
    next.searchParams.delete('before');
    next.searchParams.set(key, cursor);
    return next.toString();
  };
  const end = start + items.length;
  return {
    data,
    paging: {
      cursors: { before: encodeCursor(first.id), after: encodeCursor(last.id) },
      ...(end < all.length ? { next: link('after', encodeCursor(last.id)) } : {}),
      ...(start > 0 ? { previous: link('before', encodeCursor(first.id)) } : {}),
    },
  };
}

/** `/{waba_id}/message_templates` (§6): list with filters and cursors, create for review, delete. */
export function templateRoutes(router: GraphRouter, deps: GraphDeps): void {
  const { templates, events } = deps;

  function ownedWaba(wabaId: string, id: string, method: 'get' | 'post' | 'delete'): void {
    if (id !== wabaId) throw unknownObject(id, method);
  }

  router.authed('GET', '/:version/:id/message_templates', 'whatsapp_business_management', async ({ params, wabaId, query, request }) => {
    ownedWaba(wabaId, (params as { id: string }).id, 'get');
    const status = optionalString(query, 'status');
    if (status !== undefined && !(TEMPLATE_STATUSES as readonly string[]).includes(status.toUpperCase())) {
      throw new GraphError(100, `Param status must be one of {${TEMPLATE_STATUSES.join(', ')}}.`);
    }
    const name = optionalString(query, 'name');
    const category = optionalString(query, 'category');
    const language = optionalString(query, 'language');
    const all = await templates.list(wabaId, {
      ...(name === undefined ? {} : { name }),
      ...(status === undefined ? {} : { status }),
      ...(category === undefined ? {} : { category }),
      ...(language === undefined ? {} : { language }),
    });
    return page(all, query, new URL(`${request.protocol}://${request.host}${request.url}`));
  });

  router.authed('POST', '/:version/:id/message_templates', 'whatsapp_business_management', async ({ params, wabaId, request, behaviour }) => {
    ownedWaba(wabaId, (params as { id: string }).id, 'post');
    const template = await templates.create(wabaId, bodyObject(request.body));
    events.review(template, behaviour);
    return { id: template.id, status: template.status, category: template.category };
  });

  // `?name=` deletes every language of that name; `?hsm_id=&name=` deletes that one template (§6).
  router.authed('DELETE', '/:version/:id/message_templates', 'whatsapp_business_management', async ({ params, wabaId, query }) => {
    ownedWaba(wabaId, (params as { id: string }).id, 'delete');
    const name = optionalString(query, 'name');
    if (name === undefined) throw new GraphError(100, 'The parameter name is required.');
    const hsmId = optionalString(query, 'hsm_id');
    const matching = (await templates.list(wabaId, { name })).filter((template) => hsmId === undefined || template.id === hsmId);
    if (matching.length === 0) {
      throw new GraphError(100, hsmId === undefined ? `No template named ${name} in this account.` : `No template ${hsmId} named ${name} in this account.`, {
        message: 'Message template not found',
      });
    }
    for (const template of matching) await templates.remove(template.id);
    return { success: true };
  });
}
