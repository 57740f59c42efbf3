/**
 * The inbox the `conversations` and `conversations-floor` benches read: one organization with 50,000
 * conversations (each with its contact and one message), an organization key per load connection,
 * and the page under test as the service answers it.
 */
import type { SeedConversationsResult } from './app-commands.ts';
import { requestJson, type AppServer } from './lib.ts';

export const INBOX_CONVERSATIONS = 50_000;
/** The load's connections: one organization key each. */
export const INBOX_CONNECTIONS = 50;
export const INBOX_PATH = '/v1/conversations';
export const INBOX_QUERY = '?expand=contact,last_message&limit=25';

export interface Inbox {
  /** A dashboard session's token, for set-up calls. */
  token: string;
  organizationId: string;
  /** One `authorization` header a load connection. */
  connectionHeaders: { authorization: string }[];
  seededMs: number;
  /** `GET INBOX_PATH + INBOX_QUERY` as the service answers it. */
  page: { body: Buffer; contentType: string };
}

export async function setUpInbox(app: AppServer): Promise<Inbox> {
  const signup = await requestJson<{ token: string; organization: { id: string } }>(`${app.url}/auth/signup`, {
    body: { email: 'bench@example.com', password: 'correct horse battery staple', organization_name: 'Bench Ltd' },
    expectStatus: 201,
  });
  const connection = await requestJson<{ id: string }>(`${app.url}/v1/connections`, {
    token: signup.token,
    body: { code: 'bench-conversations', name: 'Bench line' },
    expectStatus: 201,
  });
  // One organization key per load connection, as many clients would call (startApp raises every
  // bucket, so the limiter never caps the load).
  const connectionHeaders: { authorization: string }[] = [];
  for (let i = 0; i < INBOX_CONNECTIONS; i++) {
    const { key } = await requestJson<{ key: string }>(`${app.url}/v1/api-keys`, {
      token: signup.token,
      body: { kind: 'organization', mode: 'live', name: `bench ${i}` },
      expectStatus: 201,
    });
    connectionHeaders.push({ authorization: `Bearer ${key}` });
  }
  const seeded = await app.call<SeedConversationsResult>('seedConversations', {
    organizationId: signup.organization.id,
    connectionId: connection.id,
    count: INBOX_CONVERSATIONS,
  });

  const sample = await fetch(app.url + INBOX_PATH + INBOX_QUERY, { headers: connectionHeaders[0] });
  const body = Buffer.from(await sample.arrayBuffer());
  if (sample.status !== 200) throw new Error(`GET ${INBOX_PATH}${INBOX_QUERY}: ${sample.status} ${body.toString()}`);
  const page = JSON.parse(body.toString()) as { data: { contact: unknown; last_message: unknown }[] };
  if (page.data.length !== 25 || page.data.some((item) => item.contact === null || item.last_message === null)) {
    throw new Error('the sample page does not hold 25 conversations with their contact and last message');
  }
  return {
    token: signup.token,
    organizationId: signup.organization.id,
    connectionHeaders,
    seededMs: seeded.ms,
    page: { body, contentType: sample.headers.get('content-type') ?? '' },
  };
}

/** Fails unless `server` answers the page with the service's bytes and content type. */
export async function expectSamePage(server: { url: string }, inbox: Inbox, headers: Record<string, string> = {}): Promise<void> {
  const answer = await fetch(server.url + INBOX_PATH + INBOX_QUERY, { headers });
  const body = Buffer.from(await answer.arrayBuffer());
  if (answer.status !== 200 || !body.equals(inbox.page.body) || answer.headers.get('content-type') !== inbox.page.contentType) {
    throw new Error(
      `${server.url} does not answer ${INBOX_PATH}${INBOX_QUERY} with the service's bytes and content type (${answer.status}, ${body.length} bytes)`,
    );
  }
}
