/**
 * The `conversations-floor` server, in a child process started by bench/conversations-floor.ts: the
 * inbox page (`GET /v1/conversations?expand=contact,last_message&limit=25`) with nothing but the
 * work its answer needs, from the service's own SQLite file, on bare Fastify.
 *
 * Per request: the bearer key hashed and found in memory (what the service's credential cache holds
 * once warm), three prepared statements (the page of conversations, their contacts, their last
 * messages; the service's SQL, written by hand), each row made by the service's row maker and mapped
 * by the service's own mappers, the page written by `JSON.stringify`, and the answers of a turn
 * written together at its end: each as the service does it.
 * Left out: Fastify's hooks and schemas (access, rate limits, request ids, logging), the query
 * builder, the compiled queries and the store adapter, the relation and paging helpers, and every
 * other page shape (cursors, filters, other expansions).
 */
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import Fastify from 'fastify';
import { CONNECTION_PRAGMAS, rowMaker, type RowMaker } from '../src/db/sqlite.ts';
import { EndOfTurnWrites } from '../src/http/end-of-turn-writes.ts';
import type { ContactsTable, ConversationsTable, MessagesTable } from '../src/db/schema.ts';
import { sha256Hex } from '../src/lib/crypto.ts';
import { toContact } from '../src/modules/contacts/contacts.service.ts';
import { toConversation } from '../src/modules/conversations/conversations.service.ts';
import { toMessage } from '../src/modules/messages/messages.service.ts';
import { INBOX_PATH } from './inbox-setup.ts';
import { reportToParent } from './lib.ts';

const file = process.env.BENCH_FLOOR_SQLITE_FILE;
if (!file) throw new Error('BENCH_FLOOR_SQLITE_FILE is not set; start this server through bench/conversations-floor.ts');
const LIMIT = 25;
const EXPAND = 'contact,last_message';

const database = new DatabaseSync(file);
// The service's pragmas (db/sqlite.ts); this connection only reads.
database.exec(CONNECTION_PRAGMAS);

interface Query<Row> {
  all(...values: (string | number)[]): Row[];
}

/** A statement whose rows come as arrays and are made into objects by one literal, as the service's are. */
function query<Row>(text: string): Query<Row> {
  const statement: StatementSync = database.prepare(text);
  statement.setReturnArrays(true);
  const make: RowMaker = rowMaker(statement.columns().map((column) => column.name));
  return { all: (...values) => (statement.all(...values) as unknown as unknown[][]).map((row) => make(row) as Row) };
}

const page = query<ConversationsTable>('select * from conversations where organization_id = ? order by id desc limit cast(? as integer)');
const inList = (count: number) => Array.from({ length: count }, () => '?').join(', ');
const contacts = query<ContactsTable>(`select * from contacts where organization_id = ? and deleted_at is null and id in (${inList(LIMIT)})`);
const lastMessages = query<MessagesTable>(
  `select m.* from conversations c join messages m on m.id = (select max(n.id) from messages n where n.conversation_id = c.id) where c.id in (${inList(LIMIT)})`,
);

// Every key of every organization, by hash: the service's credential cache once warm.
const organizationByKeyHash = new Map(
  (database.prepare('select key_hash, organization_id from api_keys where revoked_at is null').all() as { key_hash: string; organization_id: string }[]).map(
    (key) => [key.key_hash, key.organization_id],
  ),
);

/** The ids of a full page, padded with the first one so that one statement serves every page. */
function padded(ids: string[]): string[] {
  return ids.length === LIMIT ? ids : [...ids, ...Array.from({ length: LIMIT - ids.length }, () => ids[0] ?? '')];
}

const app = Fastify({ logger: false });
// Answers written together at the end of the event loop's turn, as the service writes them.
const writes = new EndOfTurnWrites();
app.addHook('onSend', (request, _reply, payload, done) => writes.hold(request, done, payload));
app.get<{ Querystring: { limit?: string; expand?: string } }>(INBOX_PATH, (request, reply) => {
  const organizationId = organizationByKeyHash.get(sha256Hex(request.headers.authorization?.slice('Bearer '.length) ?? ''));
  if (organizationId === undefined) return reply.code(401).send({ error: { type: 'authentication_error' } });
  if (request.query.limit !== String(LIMIT) || request.query.expand !== EXPAND) return reply.code(400).send({ error: { type: 'invalid_request_error' } });

  const rows = page.all(organizationId, LIMIT + 1);
  const hasMore = rows.length > LIMIT;
  const conversations = rows.slice(0, LIMIT).map(toConversation);
  const contactsById = new Map(
    contacts.all(organizationId, ...padded([...new Set(conversations.map((c) => c.contact_id))])).map((row) => [row.id, toContact(row)]),
  );
  const lastById = new Map(lastMessages.all(...padded(conversations.map((c) => c.id))).map((row) => [row.conversation_id, toMessage(row)]));
  const data = conversations.map((conversation) => ({
    ...conversation,
    contact: contactsById.get(conversation.contact_id) ?? null,
    last_message: lastById.get(conversation.id) ?? null,
  }));
  const body = { object: 'list', data, has_more: hasMore, next_cursor: hasMore ? conversations[LIMIT - 1]!.id : null };
  return reply.type('application/json; charset=utf-8').send(JSON.stringify(body));
});
await app.listen({ port: 0, host: '127.0.0.1' });

const address = app.server.address();
if (!address || typeof address === 'string') throw new Error('the floor server did not bind a TCP port');
reportToParent(address.port, async () => {
  await app.close();
  database.close();
});
