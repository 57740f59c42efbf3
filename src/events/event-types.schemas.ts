/**
 * The 33 event types of the outbound stream, in one list: validation of an endpoint's `events`,
 * the OpenAPI enum and the docs all read it, so they cannot disagree.
 */
export const EVENT_TYPES = {
  'message.received': 'An inbound message arrived from a contact.',
  'message.sent': 'An outbound message was accepted by the provider.',
  'message.status': "An outbound message's delivery status changed: sent, delivered, read or failed.",
  'message.echo': 'The owner sent a message from the business messaging app (coexistence only).',
  'conversation.created': 'The first message of a new thread.',
  'conversation.updated': 'State, assignee, control or labels changed.',
  'conversation.window_expiring': 'The 24-hour customer service window closes in one hour.',
  'conversation.lock_changed': 'A lock was acquired, released, expired, went idle or transferred.',
  'conversation.lock_requested': 'Someone asked the current holder to hand a conversation over.',
  'contact.created': 'A contact was created.',
  'contact.updated': 'A contact changed.',
  'contact.consent_changed': 'An opt-in or opt-out was recorded.',
  'connection.connected': 'A number finished connecting.',
  'connection.disconnected': 'A number was disconnected.',
  'connection.needs_reauth': "A number's access must be re-authorised.",
  'connection.quality_changed': 'The provider changed the quality rating.',
  'connection.limit_changed': 'The provider changed the messaging limit tier.',
  'onboarding.progress': 'History import progressed.',
  'onboarding.completed': 'History import finished.',
  'onboarding.failed': 'History import failed.',
  'template.status_changed': 'A template was approved, rejected, paused or disabled.',
  'notification.sent': 'The notification rail sent one.',
  'notification.delivered': 'A notification was delivered.',
  'notification.failed': 'A notification failed.',
  'notification.expired': 'A notification expired before it could be sent.',
  'automation.run_started': 'An automation run began.',
  'automation.run_finished': 'A run finished.',
  'automation.run_failed': 'A run failed.',
  'automation.auto_disabled': 'An automation was disabled after repeated failures.',
  'approval.requested': 'A run is waiting on a human decision.',
  'approval.decided': 'That decision was made.',
  'usage.threshold_reached': 'A usage meter crossed a warning threshold.',
  ping: 'Test only: what the endpoint test operation sends.',
} as const;

export type EventType = keyof typeof EVENT_TYPES;

/**
 * Every type, `ping` included, is a valid value of an endpoint's `events` (the spec: "the values are
 * the event types in the Events part"); `ping` is still sent only by the test operation.
 */
export const EVENT_TYPE_NAMES = Object.keys(EVENT_TYPES) as EventType[];

export const API_VERSION = 'v1';
