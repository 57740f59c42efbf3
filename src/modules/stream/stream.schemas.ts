import Type, { type Static } from 'typebox';
import { Id, Strict } from '../../http/schemas.ts';

const RESUME_DESCRIPTION =
  'Resume after this event: the events that follow it are replayed first (at most 1,000). `Last-Event-ID` is what a reconnecting client sends; the query parameter is the fallback for clients that cannot set headers, and the header wins when both are sent.';

export const StreamHeaders = Type.Object({
  accept: Type.String({
    description: 'Must include `text/event-stream`: the endpoint answers nothing else, and a client that did not ask for a stream is told so at once.',
  }),
  'last-event-id': Type.Optional(Id('event', RESUME_DESCRIPTION)),
});

export const StreamQuery = Strict({
  last_event_id: Type.Optional(Id('event', RESUME_DESCRIPTION)),
});

/**
 * The control events of the stream, which carry no `id` (so a client's Last-Event-ID stays the last
 * event envelope it received): what their `event:` field says, and what the client does.
 */
export const STREAM_NOTICES = {
  /** The resume point could not be honoured: the client refetches what it shows, then reads on. */
  reset: 'stream.reset',
  /** The credential no longer holds: the client renews its token and reconnects with Last-Event-ID. */
  expired: 'stream.expired',
  /** The server is shutting down or the client read too slowly: the client reconnects with Last-Event-ID. */
  closed: 'stream.closed',
} as const;

/** Why a control event was sent: a catalogue code for `stream.expired`, a word of its own otherwise. */
export const STREAM_NOTICE_REASONS = [
  'unknown_event_id',
  'too_many_missed',
  'credential_expired',
  'credential_revoked',
  'credential_invalid',
  'server_closing',
  'slow_reader',
] as const;

/** The `data` of a control event. */
export const StreamNoticeSchema = Type.Object({
  reason: Type.Enum(STREAM_NOTICE_REASONS),
  message: Type.String(),
});
export type StreamNotice = Static<typeof StreamNoticeSchema>;
export type StreamNoticeEvent = (typeof STREAM_NOTICES)[keyof typeof STREAM_NOTICES];
