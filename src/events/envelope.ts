import Type, { type Static } from 'typebox';
import { API_VERSION, EVENT_TYPE_NAMES } from './event-types.schemas.ts';

/** The event envelope, exactly as the spec's table: what every webhook delivery carries. */
export const EventEnvelopeSchema = Type.Object({
  id: Type.String({ description: '`evt_` identifier; stable across redeliveries.' }),
  object: Type.Literal('event'),
  type: Type.Enum(EVENT_TYPE_NAMES),
  api_version: Type.Literal(API_VERSION),
  created_at: Type.String({ format: 'date-time' }),
  organization_id: Type.String(),
  connection_id: Type.Union([Type.String(), Type.Null()], { description: 'The connection the event concerns; null for organization-wide events.' }),
  data: Type.Object({ object: Type.Record(Type.String(), Type.Unknown()) }),
  previous_attributes: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), { description: 'Only on `*.updated` events: the changed fields, with their values before the change.' }),
  ),
});
export type EventEnvelope = Static<typeof EventEnvelopeSchema>;

/**
 * The fields of `after` whose values differ from `before`, with their old values: what an
 * `*.updated` event's `previous_attributes` holds.
 */
export function changedAttributes(before: Record<string, unknown>, after: Record<string, unknown>): Record<string, unknown> {
  const changed: Record<string, unknown> = {};
  for (const key of Object.keys(after)) {
    if (JSON.stringify(before[key]) !== JSON.stringify(after[key])) changed[key] = before[key] ?? null;
  }
  return changed;
}
