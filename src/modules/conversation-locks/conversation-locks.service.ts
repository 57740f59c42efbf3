import type { Db, Trx } from '../../db/connect.ts';
import type { ConversationLocksTable } from '../../db/schema.ts';
import type { EventSink } from '../../events/emit.ts';
import { conversationLockExpire } from '../../jobs/catalog.ts';
import type { Queue } from '../../jobs/queue.ts';
import { SECOND, type Clock } from '../../lib/clock.ts';
import { AppError, invalidParam } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { Conversation, ConversationsService } from '../conversations/index.ts';
import type { Principal } from '../credentials/principal.ts';
import { ROLE_SCOPES } from '../credentials/scopes.schemas.ts';
import type { MembersService } from '../members/index.ts';
import {
  LOCK_DEFAULT_TTL_SECONDS,
  type AcquireLockInput,
  type ConversationLock,
  type LockChange,
  type LockStatus,
  type RequestLockInput,
  type TransferLockInput,
} from './conversation-locks.schemas.ts';
import type { ConversationLocksStore, LockChanges } from './conversation-locks.store.ts';

type Row = ConversationLocksTable;
type Ending = Extract<LockChange, 'released' | 'expired' | 'idle'>;

function toLock(row: Row): ConversationLock {
  return {
    id: row.id,
    object: 'lock',
    conversation_id: row.conversation_id,
    connection_id: row.connection_id,
    status: row.status as LockStatus,
    last_change: row.last_change as LockChange,
    holder: { member_id: row.holder_member_id },
    previous_holder: row.previous_holder_member_id === null ? null : { member_id: row.previous_holder_member_id },
    ttl_seconds: row.ttl_seconds,
    idle_seconds: row.idle_seconds,
    acquired_at: row.acquired_at,
    renewed_at: row.renewed_at,
    expires_at: row.expires_at,
    idle_expires_at: row.idle_expires_at,
    ended_at: row.ended_at,
    handover_request:
      row.request_member_id === null ? null : { member_id: row.request_member_id, message: row.request_message, requested_at: row.requested_at! },
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * Both deadlines run from the last renewal and the idle period is never longer than the lease, so a
 * lease ends at its idle deadline: `idle` when that comes before the TTL, `expired` when they meet.
 */
const endingOf = (row: Row): Ending => (row.idle_expires_at < row.expires_at ? 'idle' : 'expired');

/**
 * A timer is keyed by its deadline: a renewal gets a new key (the old timer is cancelled), and a key
 * a running timer used up is never needed again, since every new deadline is later than now.
 */
const timerKey = (lockId: string, endsAt: string) => `conversation_lock.expire:${lockId}:${endsAt}`;

/** The lease's clocks, restarted at `now`. */
function leaseFrom(now: Date, ttlSeconds: number, idleSeconds: number) {
  const at = (seconds: number) => new Date(now.getTime() + seconds * SECOND).toISOString();
  return { ttl_seconds: ttlSeconds, idle_seconds: idleSeconds, renewed_at: now.toISOString(), expires_at: at(ttlSeconds), idle_expires_at: at(idleSeconds) };
}

/**
 * The periods of a new lease or a renewal: what was sent, else the lock's own (a renewal), else the
 * defaults. An idle period left to default follows the TTL down; one sent longer than the TTL could
 * never be reached, and is refused.
 */
function periodsOf(input: AcquireLockInput, held: Row | undefined): { ttl: number; idle: number } {
  const ttl = input.ttl_seconds ?? held?.ttl_seconds ?? LOCK_DEFAULT_TTL_SECONDS;
  if (input.idle_seconds !== undefined && input.idle_seconds > ttl) throw invalidParam('/idle_seconds', `must not exceed ttl_seconds (${ttl})`, 'out_of_range');
  return { ttl, idle: input.idle_seconds ?? Math.min(held?.idle_seconds ?? ttl, ttl) };
}

const notLocked = (conversationId: string) => new AppError('invalid_state', `Conversation ${conversationId} is not locked.`);
const noSuchMember = (memberId: string) => new AppError('resource_not_found', `No such member: ${memberId}.`, { param: '/member_id' });

/** The API's holder: only a dashboard token has a member to name; the routes admit no other kind. */
function memberOf(principal: Principal): string {
  if (principal.memberId === null) {
    throw new AppError('credential_kind_not_allowed', 'Only members hold conversation locks: use a dashboard token.', {
      extra: { allowed_credentials: ['dashboard_token'] },
    });
  }
  return principal.memberId;
}

export interface ConversationLocksServiceDeps {
  db: Db;
  store: ConversationLocksStore;
  clock: Clock;
  events: EventSink;
  queue: Queue;
  conversations: Pick<ConversationsService, 'getForReference'>;
  members: Pick<MembersService, 'find'>;
}

export function createConversationLocksService(deps: ConversationLocksServiceDeps) {
  const { db, store, clock, events, queue, conversations, members } = deps;

  function lockedError(row: Row): AppError {
    return new AppError(
      'conversation_locked',
      `Conversation ${row.conversation_id} is locked by member ${row.holder_member_id} until ${row.idle_expires_at} unless renewed.`,
      {
        extra: { lock: toLock(row) },
      },
    );
  }

  /**
   * Whether a `held` lease still binds anyone: not once its deadline passed by the clock (its timer
   * may not have run yet), nor once its holder left the organization (a removed member cannot renew
   * or release, and must not keep the conversation shut until the deadline).
   */
  async function standing(executor: Db, row: Row): Promise<'live' | Ending> {
    if (Date.parse(row.idle_expires_at) <= clock.now().getTime()) return endingOf(row);
    return (await members.find(row.organization_id, row.holder_member_id, executor)) === undefined ? 'released' : 'live';
  }

  async function announce(trx: Trx, row: Row): Promise<void> {
    await events.emit(trx, { type: 'conversation.lock_changed', organizationId: row.organization_id, connectionId: row.connection_id, object: toLock(row) });
  }

  /** Moves the lease's timer from the deadline it had (null: none yet) to the one it has now. */
  async function rearm(trx: Trx, from: string | null, row: Row): Promise<void> {
    if (from === row.idle_expires_at) return;
    if (from !== null) await queue.cancel(trx, timerKey(row.id, from));
    await queue.enqueue(
      trx,
      conversationLockExpire,
      { lock_id: row.id, ends_at: row.idle_expires_at },
      {
        runAt: new Date(row.idle_expires_at),
        dedupeKey: timerKey(row.id, row.idle_expires_at),
      },
    );
  }

  async function change(trx: Trx, row: Row, changes: LockChanges): Promise<Row> {
    const next = { ...row, ...changes, updated_at: clock.now().toISOString() };
    await store.update(trx, row.id, { ...changes, updated_at: next.updated_at });
    return next;
  }

  /** Ends a held lease and announces it. A deadline passed ends it at that deadline, not when noticed. */
  async function end(trx: Trx, row: Row, ending: Ending): Promise<Row> {
    const endedAt = ending === 'released' ? clock.now().toISOString() : row.idle_expires_at;
    const ended = await change(trx, row, { status: ending, last_change: ending, ended_at: endedAt });
    // The timer that is running this (if it is) is no longer queued, and is left alone.
    await queue.cancel(trx, timerKey(row.id, row.idle_expires_at));
    await announce(trx, ended);
    return ended;
  }

  /**
   * The conversation's lease, locked, for a change: a lease that no longer binds is ended first (and
   * announced) and the conversation answered as free.
   */
  async function current(trx: Trx, conversationId: string): Promise<Row | undefined> {
    const row = await store.lockHeld(trx, conversationId);
    if (!row) return undefined;
    const state = await standing(trx, row);
    if (state === 'live') return row;
    await end(trx, row, state);
    return undefined;
  }

  /** The lease the caller holds, locked: refused when the conversation is free or someone else holds it. */
  async function heldBy(trx: Trx, principal: Principal, conversationId: string): Promise<Row> {
    await conversations.getForReference(trx, principal, conversationId);
    const row = await current(trx, conversationId);
    if (!row) throw notLocked(conversationId);
    if (row.holder_member_id !== memberOf(principal)) throw lockedError(row);
    return row;
  }

  async function renew(trx: Trx, held: Row, input: AcquireLockInput): Promise<Row> {
    const { ttl, idle } = periodsOf(input, held);
    const next = await change(trx, held, { ...leaseFrom(clock.now(), ttl, idle), last_change: 'renewed' });
    await rearm(trx, held.idle_expires_at, next);
    return next;
  }

  /** Answers null when another transaction took the conversation first. */
  async function acquireFree(trx: Trx, principal: Principal, conversation: Conversation, input: AcquireLockInput): Promise<Row | null> {
    const { ttl, idle } = periodsOf(input, undefined);
    const now = clock.now();
    const row: Row = {
      id: newId('lock', now.getTime()),
      organization_id: principal.organizationId,
      connection_id: conversation.connection_id,
      conversation_id: conversation.id,
      status: 'held',
      last_change: 'acquired',
      holder_member_id: memberOf(principal),
      previous_holder_member_id: null,
      ...leaseFrom(now, ttl, idle),
      acquired_at: now.toISOString(),
      ended_at: null,
      request_member_id: null,
      request_message: null,
      requested_at: null,
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
    };
    if (!(await store.insertIfFree(trx, row))) return null;
    await rearm(trx, null, row);
    await announce(trx, row);
    return row;
  }

  return {
    /**
     * Acquires the conversation's lock for the caller, or renews it when the caller holds it already
     * (both deadlines move; nothing is announced). Another member's lease is `conversation_locked`.
     */
    async acquire(principal: Principal, conversationId: string, input: AcquireLockInput): Promise<{ lock: ConversationLock; acquired: boolean }> {
      const memberId = memberOf(principal);
      return db.transaction().execute(async (trx) => {
        const conversation = await conversations.getForReference(trx, principal, conversationId);
        // A second pass only when a concurrent acquisition committed between this one's read and its
        // insert (PostgreSQL): that lease is then read, and answered as any other.
        for (let pass = 0; pass < 3; pass++) {
          const held = await current(trx, conversationId);
          if (held && held.holder_member_id !== memberId) throw lockedError(held);
          if (held) return { lock: toLock(await renew(trx, held, input)), acquired: false };
          const row = await acquireFree(trx, principal, conversation, input);
          if (row) return { lock: toLock(row), acquired: true };
        }
        throw new Error(`conversation ${conversationId}: the lock changed hands on every attempt to acquire it`);
      });
    },

    /**
     * A contact merge folds this conversation into another and deletes it: its lease ends with it
     * (`released`, announced), in the merge's transaction, so that no holder is left believing they
     * hold a conversation that no longer exists.
     */
    async endWithConversation(trx: Trx, conversationId: string): Promise<void> {
      const held = await current(trx, conversationId);
      if (held) await end(trx, held, 'released');
    },

    /** A member leaves: their leases end (`released`, announced) in the removal's transaction, not at their deadlines. */
    async releaseAllOf(trx: Trx, memberId: string, organizationId: string): Promise<void> {
      for (const row of await store.lockHeldBy(trx, organizationId, memberId)) await end(trx, row, 'released');
    },

    /** Ends the caller's lease (`released`). */
    async release(principal: Principal, conversationId: string): Promise<ConversationLock> {
      return db.transaction().execute(async (trx) => toLock(await end(trx, await heldBy(trx, principal, conversationId), 'released')));
    },

    /**
     * Hands the caller's lease to another member who may send messages: they get a fresh lease of the
     * same periods (they may not be looking yet), and the pending handover request is settled.
     */
    async transfer(principal: Principal, conversationId: string, input: TransferLockInput): Promise<ConversationLock> {
      const target = input.member_id;
      if (target === memberOf(principal)) throw invalidParam('/member_id', 'must be another member than the holder');
      return db.transaction().execute(async (trx) => {
        const held = await heldBy(trx, principal, conversationId);
        const member = await members.find(principal.organizationId, target, trx);
        if (member === undefined) throw noSuchMember(target);
        if (!ROLE_SCOPES[member.role].includes('messages:write'))
          throw invalidParam('/member_id', `cannot hold a lock: a ${member.role} may not send messages`);
        const now = clock.now();
        const next = await change(trx, held, {
          ...leaseFrom(now, held.ttl_seconds, held.idle_seconds),
          holder_member_id: target,
          previous_holder_member_id: held.holder_member_id,
          acquired_at: now.toISOString(),
          last_change: 'transferred',
          request_member_id: null,
          request_message: null,
          requested_at: null,
        });
        await rearm(trx, held.idle_expires_at, next);
        await announce(trx, next);
        return toLock(next);
      });
    },

    /**
     * Asks the holder to hand the lock over (`conversation.lock_requested`, with the request on the
     * lock). The latest request replaces an earlier one; the lease itself does not change.
     */
    async request(principal: Principal, conversationId: string, input: RequestLockInput): Promise<ConversationLock> {
      const memberId = memberOf(principal);
      return db.transaction().execute(async (trx) => {
        await conversations.getForReference(trx, principal, conversationId);
        const held = await current(trx, conversationId);
        if (!held) throw new AppError('invalid_state', `Conversation ${conversationId} is not locked: acquire the lock instead.`);
        if (held.holder_member_id === memberId) throw new AppError('invalid_state', 'You hold this lock already.');
        const next = await change(trx, held, { request_member_id: memberId, request_message: input.message ?? null, requested_at: clock.now().toISOString() });
        await events.emit(trx, {
          type: 'conversation.lock_requested',
          organizationId: next.organization_id,
          connectionId: next.connection_id,
          object: toLock(next),
        });
        return toLock(next);
      });
    },

    /** The lock that binds the conversation now; none is `resource_not_found`. */
    async get(principal: Principal, conversationId: string): Promise<ConversationLock> {
      await conversations.getForReference(db, principal, conversationId);
      const row = await store.findHeld(db, principal.organizationId, conversationId);
      if (!row || (await standing(db, row)) !== 'live') throw new AppError('resource_not_found', `No lock is held on conversation ${conversationId}.`);
      return toLock(row);
    },

    /**
     * For the send pipeline: refuses (`conversation_locked`, naming the lock) when a lease binds the
     * conversation and the caller is not its holder. An API key or OAuth token is never the holder.
     */
    async assertMaySend(executor: Db, conversationId: string, principal: Principal): Promise<void> {
      const row = await store.findHeld(executor, principal.organizationId, conversationId);
      if (!row || row.holder_member_id === principal.memberId) return;
      if ((await standing(executor, row)) === 'live') throw lockedError(row);
    },

    /** The timer's work: ends the lease at its deadline, unless it was renewed, handed over or ended since. */
    async expire(lockId: string, endsAt: string): Promise<void> {
      await db.transaction().execute(async (trx) => {
        const row = await store.lockById(trx, lockId);
        if (!row || row.status !== 'held' || row.idle_expires_at !== endsAt) return;
        await end(trx, row, endingOf(row));
      });
    },
  };
}

export type ConversationLocksService = ReturnType<typeof createConversationLocksService>;
