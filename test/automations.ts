/**
 * For the tests of runs: a fresh synced number, an automation deployed and enabled on it, and reading
 * what it did: its runs, a run's event log, a conversation's outbound messages, a conversation. Each call asserts its answer
 * was a success, so a test reads as what it checks.
 */
import assert from 'node:assert/strict';
import { createConnection } from './factories.ts';
import type { TestServer } from './harness.ts';

type Json = Record<string, any>;

/** The helpers for one server and one credential (an organization key: it outlives the manual clock's hours). */
export function automationReader(server: () => TestServer, token: () => string) {
  async function read(path: string): Promise<Json> {
    const response = await server().request('GET', path, { token: token() });
    assert.equal(response.status, 200, response.text);
    return response.body;
  }
  return {
    /** An automation on one number, its definition written as version 1, deployed and enabled. */
    async automationOn(connectionId: string, definition: Json, name = 'Auto'): Promise<Json> {
      const created = await server().request('POST', '/v1/automations', { token: token(), body: { name, connection_id: connectionId, definition } });
      assert.equal(created.status, 201, created.text);
      const deployed = await server().request('POST', `/v1/automations/${created.body.id}/deploy`, { token: token(), body: { version: 1 } });
      assert.equal(deployed.status, 200, deployed.text);
      const enabled = await server().request('POST', `/v1/automations/${created.body.id}/enable`, { token: token() });
      assert.equal(enabled.status, 200, enabled.text);
      return enabled.body;
    },
    /** A new number whose account's templates are synced (the sandbox approves `hello_world`). */
    async number(options: { coexistence?: boolean } = {}) {
      const connection = await createConnection(server(), { token: token() }, options);
      const sync = await server().request('POST', `/v1/connections/${connection.id}/sync`, { token: token() });
      assert.equal(sync.status, 200, sync.text);
      return connection;
    },
    runsOf: async (automationId: string): Promise<Json[]> => (await read(`/v1/runs?automation_id=${automationId}`)).data,
    eventsOf: async (runId: string): Promise<Json[]> => (await read(`/v1/runs/${runId}/events`)).data,
    /** The conversation's outbound messages, oldest first. */
    outbound: async (conversationId: string): Promise<Json[]> =>
      (await read(`/v1/messages?conversation_id=${conversationId}&order=asc&limit=100`)).data.filter((message: Json) => message.direction === 'outbound'),
    conversation: (id: string): Promise<Json> => read(`/v1/conversations/${id}`),
  };
}
