import type { Db } from '../../db/connect.ts';
import type { ConversationsTable } from '../../db/schema.ts';
import { changedAttributes } from '../../events/envelope.ts';
import type { EventEmitter } from '../../events/emit.ts';
import type { Clock } from '../../lib/clock.ts';
import { newId } from '../../lib/ids.ts';
import type { Conversation, ConversationState } from './conversations.schemas.ts';
import type { ConversationsStore } from './conversations.store.ts';

function toConversation(row: ConversationsTable): Conversation {
  return {
    id: row.id,
    object: 'conversation',
    connection_id: row.connection_id,
    contact_id: row.contact_id,
    state: row.state as ConversationState,
    last_message_at: row.last_message_at,
    last_inbound_at: row.last_inbound_at,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

const later = (a: string | null, b: string | null): string | null => (a === null ? b : b === null ? a : a > b ? a : b);

export function createConversationsService(deps: { store: ConversationsStore; clock: Clock; events: EventEmitter }) {
  const { store, clock, events } = deps;
  return {
    /**
     * Files a message into the thread of a number and a customer: the first message creates the
     * thread (`conversation.created`); a customer's message reopens a closed one. `inboundAt` is set
     * for a message the customer sent; imported history moves no clock and reopens nothing.
     */
    async recordMessage(trx: Db, input: { organizationId: string; connectionId: string; contactId: string; at: Date; inbound: boolean; imported: boolean }): Promise<Conversation> {
      const now = clock.now().toISOString();
      const at = input.at.toISOString();
      const fresh: ConversationsTable = {
        id: newId('conversation', clock.now().getTime()),
        organization_id: input.organizationId,
        connection_id: input.connectionId,
        contact_id: input.contactId,
        state: 'open',
        last_message_at: input.imported ? null : at,
        last_inbound_at: input.inbound && !input.imported ? at : null,
        metadata: '{}',
        created_at: now,
        updated_at: now,
      };
      if (await store.insertIfAbsent(trx, fresh)) {
        const conversation = toConversation(fresh);
        await events.emit(trx, { type: 'conversation.created', organizationId: input.organizationId, connectionId: input.connectionId, object: conversation });
        return conversation;
      }
      const row = (await store.findThread(trx, input.connectionId, input.contactId))!;
      if (input.imported) return toConversation(row);
      const changes = {
        last_message_at: later(row.last_message_at, at),
        last_inbound_at: input.inbound ? later(row.last_inbound_at, at) : row.last_inbound_at,
        state: input.inbound && row.state === 'closed' ? 'open' : row.state,
      };
      const next = { ...row, ...changes, updated_at: now };
      await store.update(trx, row.id, { ...changes, updated_at: now });
      // Only the state is a change people act on; the clocks move with every message.
      if (next.state !== row.state) {
        await events.emit(trx, {
          type: 'conversation.updated', organizationId: input.organizationId, connectionId: input.connectionId,
          object: toConversation(next), previousAttributes: changedAttributes(toConversation(row), toConversation(next)),
        });
      }
      return toConversation(next);
    },
  };
}

export type ConversationsService = ReturnType<typeof createConversationsService>;
