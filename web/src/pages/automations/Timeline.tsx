import type { RunEvent } from './api.ts';
import { formatTime } from './api.ts';
import styles from './automations.module.css';

type Data = Record<string, unknown>;

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** What a sent message says, from a log entry's `content` (a dry run's) or its type (a live one's, whose message is in the thread). */
function contentLine(data: Data): string {
  const content = data.content as Data | undefined;
  if (!content) return `a ${text(data.type) ?? 'message'} message (${text(data.message_id) ?? ''})`;
  const body = text((content.text as Data | undefined)?.body);
  if (body) return `“${body}”`;
  const template = content.template as Data | undefined;
  if (template) return `the template ${text(template.name)} (${text(template.language)})`;
  return `a ${text(content.type) ?? 'message'}`;
}

/** One entry in words, where the type has something worth saying (docs/automations.md#the-event-log); else its data as JSON. */
function describe(event: RunEvent): string | null {
  const data = event.data;
  const simulated = data.simulated === true ? ' (simulated)' : '';
  switch (event.type) {
    case 'effect.message_queued':
      return `Sends ${contentLine(data)}${simulated}`;
    case 'effect.handed_off':
      return `Hands the conversation to an agent${data.note ? `: “${text(data.note)}”` : ''}${simulated}`;
    case 'effect.http_request':
      return `${text(data.method)} ${text(data.url)} (attempt ${typeof data.attempt === 'number' ? data.attempt : 1})${simulated}`;
    case 'effect.http_response':
      return typeof data.status === 'number' ? `Answered ${data.status}${simulated}` : `Failed: ${text(data.message) ?? text(data.error)}`;
    case 'approval.requested':
      return `Asks for approval: “${text(data.title)}”${simulated}`;
    case 'run.completed':
    case 'run.canceled':
      return `Outcome: ${text(data.outcome)}${data.reason ? ` (${text(data.reason)})` : ''}`;
    case 'run.failed':
    case 'run.timed_out': {
      const error = data.error as Data | undefined;
      return error ? `${text(error.code)}: ${text(error.message)}` : null;
    }
    case 'step.failed':
      return `${text(data.code)}: ${text(data.message)}`;
    default:
      return Object.keys(data).length === 0 ? null : JSON.stringify(data);
  }
}

/** A run's event log, in order: what it did, step by step (a dry run's effects marked simulated). */
export function Timeline({ events }: { events: RunEvent[] }) {
  return (
    <ol className={styles.timeline} aria-label="Event log">
      {events.map((event) => {
        const detail = describe(event);
        return (
          <li key={event.seq} className={styles.timelineEntry}>
            <span className={styles.seq}>#{event.seq}</span>
            <time dateTime={event.at} className={styles.muted}>
              {formatTime(event.at)}
            </time>
            <span>
              <strong>{event.type}</strong>
              {event.step_id && (
                <>
                  {' '}
                  · step <code>{event.step_id}</code>
                </>
              )}
              {detail && <div className={styles.detail}>{detail}</div>}
            </span>
          </li>
        );
      })}
    </ol>
  );
}
