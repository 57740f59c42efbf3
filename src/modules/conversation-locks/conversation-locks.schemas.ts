import Type, { type Static } from 'typebox';
import { Id, Nullable, Strict, Timestamp } from '../../http/schemas.ts';

/** A lease lasts at least a second and at most an hour: longer holds are renewed, which proves the holder is still there. */
export const LOCK_MIN_SECONDS = 1;
export const LOCK_MAX_SECONDS = 3600;
export const LOCK_DEFAULT_TTL_SECONDS = 300;

/** `held` while the lease runs; otherwise how it ended. */
export const LOCK_STATUSES = ['held', 'released', 'expired', 'idle'] as const;
export type LockStatus = (typeof LOCK_STATUSES)[number];

/** What happened to the lock last: `conversation.lock_changed` carries it in `data.object.last_change`. */
export const LOCK_CHANGES = ['acquired', 'renewed', 'transferred', 'released', 'expired', 'idle'] as const;
export type LockChange = (typeof LOCK_CHANGES)[number];

const Seconds = (description: string) => Type.Integer({ minimum: LOCK_MIN_SECONDS, maximum: LOCK_MAX_SECONDS, description });
const MemberRef = Type.Object({ member_id: Id('member') });

export const ConversationLockSchema = Type.Object(
  {
    id: Id('lock'),
    object: Type.Literal('lock'),
    conversation_id: Id('conversation'),
    connection_id: Id('connection'),
    status: Type.Enum(LOCK_STATUSES, {
      description:
        '`held` while the lease runs; once ended, how: `released` by its holder, `expired` at its TTL, or `idle` when not renewed within `idle_seconds`.',
    }),
    last_change: Type.Enum(LOCK_CHANGES, {
      description: 'What happened to the lock last; the `conversation.lock_changed` event that announced it carries the same value.',
    }),
    holder: MemberRef,
    previous_holder: Nullable(MemberRef, { description: 'The member who handed the lock over, after a transfer; null otherwise.' }),
    ttl_seconds: Type.Integer({ description: 'How long the lease lasts after each acquisition, renewal or transfer.' }),
    idle_seconds: Type.Integer({ description: 'How long the holder may go without renewing; at most `ttl_seconds`.' }),
    acquired_at: Timestamp,
    renewed_at: Timestamp,
    expires_at: Timestamp,
    idle_expires_at: Timestamp,
    ended_at: Nullable(Timestamp, { description: 'When the lease ended: the time it was released, or the deadline it passed; null while held.' }),
    handover_request: Nullable(Type.Object({ member_id: Id('member'), message: Nullable(Type.String()), requested_at: Timestamp }), {
      description: 'The latest request to hand the lock over, while it is held; cleared by a transfer.',
    }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  {
    description:
      'A lease on a conversation held by one member. Unless renewed it ends at `idle_expires_at`, which is never later than `expires_at`: as `idle` when earlier, as `expired` when they coincide.',
  },
);
export type ConversationLock = Static<typeof ConversationLockSchema>;

export const AcquireLockBody = Strict({
  ttl_seconds: Type.Optional(
    Seconds(`The lease, from now: 1 to 3600 seconds. Default ${LOCK_DEFAULT_TTL_SECONDS} when acquiring; a renewal keeps the lock's own unless given.`),
  ),
  idle_seconds: Type.Optional(
    Seconds(
      "How long the holder may go without renewing: 1 second up to `ttl_seconds`. Default `ttl_seconds` when acquiring; a renewal keeps the lock's own (capped at the new `ttl_seconds`) unless given.",
    ),
  ),
});
export type AcquireLockInput = Static<typeof AcquireLockBody>;

export const TransferLockBody = Strict({
  member_id: Id('member', 'The member who receives the lock: another member of the organization whose role may send messages.'),
});
export type TransferLockInput = Static<typeof TransferLockBody>;

export const RequestLockBody = Strict({
  message: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'A note for the holder: why you need the conversation.' })),
});
export type RequestLockInput = Static<typeof RequestLockBody>;
