import { EVENT_TYPES, type EventType } from '../../../../src/events/event-types.schemas.ts';
import { Badge } from '../../ui/admin.tsx';
import { useConnections } from '../connections/connections-data.ts';
import styles from './developers.module.css';
import { Choice, ChoiceGroup } from './fields.tsx';
import type { WebhookDelivery, WebhookEndpoint } from './types.ts';

/** `["*"]`: every type, present and future (the API stores it as such). */
export const EVERY_EVENT = '*';
/** `ping` may be listed but changes nothing (only a test sends it), so it is not offered. */
const CHOOSABLE = (Object.keys(EVENT_TYPES) as EventType[]).filter((type) => type !== 'ping');

export function everyEvent(events: readonly string[]): boolean {
  return events.length === 1 && events[0] === EVERY_EVENT;
}

export function eventsSummary(events: readonly string[]): string {
  if (everyEvent(events)) return 'Every event';
  return events.length <= 2 ? events.join(', ') : `${events.length} event types`;
}

/**
 * The endpoint's `events`: every type (future ones included), or a chosen set, each type with what
 * it means. An empty choice is left to the caller to refuse (the API does too: at least one).
 */
export function EventPicker({ value, onChange }: { value: readonly string[]; onChange: (events: string[]) => void }) {
  const every = everyEvent(value);
  const toggle = (type: string, on: boolean) => onChange(on ? [...value, type] : value.filter((each) => each !== type));
  return (
    <ChoiceGroup legend="Events" hint="Test pings reach the endpoint whatever it subscribes to.">
      <Choice
        type="radio"
        name="events-mode"
        label="Every event type"
        detail="including types added later"
        checked={every}
        onChange={() => onChange([EVERY_EVENT])}
      />
      <Choice
        type="radio"
        name="events-mode"
        label="Only the types chosen below"
        checked={!every}
        onChange={() => {
          if (every) onChange([]);
        }}
      />
      {!every && (
        <>
          <div className={styles.choices}>
            {CHOOSABLE.map((type) => (
              <Choice
                key={type}
                type="checkbox"
                name="event"
                label={<code className={styles.code}>{type}</code>}
                checked={value.includes(type)}
                onChange={(on) => toggle(type, on)}
              />
            ))}
          </div>
          {value.length === 0 && <span className={styles.fieldError}>Choose at least one event type.</span>}
        </>
      )}
    </ChoiceGroup>
  );
}

/** Why an endpoint is disabled, in words (`disabled_reason`). */
export function disabledReason(reason: string | null): string {
  switch (reason) {
    case 'consecutive_failures':
      return 'Disabled automatically: its deliveries failed 100 times in a row over at least 24 hours. Fix the receiver, then enable it again.';
    case 'manual':
      return 'Disabled by a member of the organization.';
    default:
      return reason ? `Disabled (${reason}).` : 'Disabled.';
  }
}

export function EndpointStatus({ endpoint }: { endpoint: WebhookEndpoint }) {
  if (endpoint.status === 'enabled') return <Badge tone="good">enabled</Badge>;
  return (
    <>
      <Badge tone="bad">disabled</Badge>
      <div className={styles.muted}>{disabledReason(endpoint.disabled_reason)}</div>
    </>
  );
}

/** A connection's name for an endpoint bound to one (`null`: every number). */
export function useConnectionName(): (id: string | null) => string {
  const connections = useConnections().data ?? [];
  return (id) => {
    if (id === null) return 'Every number';
    const connection = connections.find((each) => each.id === id);
    return connection ? (connection.name ?? connection.display_phone_number ?? id) : id;
  };
}

/** A delivery's outcome: the receiver's status code, or why no answer came. */
export function DeliveryOutcome({ delivery }: { delivery: Pick<WebhookDelivery, 'status' | 'response_status' | 'error'> }) {
  const tone = delivery.status === 'succeeded' ? 'good' : delivery.status === 'failed' ? 'bad' : undefined;
  return (
    <>
      <Badge tone={tone}>{delivery.status}</Badge>{' '}
      {delivery.response_status !== null ? (
        <span>HTTP {delivery.response_status}</span>
      ) : (
        delivery.error && <span className={styles.code}>{delivery.error}</span>
      )}
    </>
  );
}

export function duration(ms: number | null): string {
  return ms === null ? '—' : `${ms} ms`;
}
