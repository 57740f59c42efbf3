import Type from 'typebox';
import { HOUR, MINUTE, SECOND } from '../lib/clock.ts';
import { defineJob, defineRecurringJob, retrySchedule } from './job.ts';

/**
 * Every job the service runs: its name, payload and retry policy. Handlers live with the module
 * that owns the work (`modules/<resource>/*.job.ts`); this list is the one place to see them all.
 */

/** The spec's schedule: 8 retries after the first attempt, nominally at these delays, with jitter. */
export const WEBHOOK_RETRY_DELAYS = [5 * SECOND, 30 * SECOND, 2 * MINUTE, 10 * MINUTE, HOUR, 4 * HOUR, 12 * HOUR, 24 * HOUR] as const;

export const webhookDelivery = defineJob({
  name: 'webhook.deliver',
  payload: Type.Object({
    event_id: Type.String(),
    endpoint_id: Type.String(),
    /** Set when a person asked to send one attempt again: the attempt being replayed. */
    replay_of: Type.Optional(Type.String()),
  }),
  retry: retrySchedule(WEBHOOK_RETRY_DELAYS, { jitter: 0.1 }),
  // The receiver gets 10 s; the rest covers resolving its name and recording the outcome.
  timeoutMs: 20 * SECOND,
});

export const mailSend = defineJob({
  name: 'mail.send',
  payload: Type.Object({ mail_id: Type.String() }),
  retry: retrySchedule([MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 6 * HOUR]),
  timeoutMs: 30 * SECOND,
});

/** Processes one webhook the provider sent, stored as received: the webhook answered before this ran. */
export const providerWebhookProcess = defineJob({
  name: 'provider_webhook.process',
  payload: Type.Object({ provider_webhook_id: Type.String() }),
  retry: retrySchedule([5 * SECOND, 30 * SECOND, 2 * MINUTE, 10 * MINUTE, HOUR, 4 * HOUR]),
  // Processing may read the number from the provider (a quality change), which has a 10 s time-out.
  timeoutMs: 60 * SECOND,
});

/** Coexistence onboarding: asks the provider for the business app's contacts and chat history. */
export const connectionOnboard = defineJob({
  name: 'connection.onboard',
  payload: Type.Object({ connection_id: Type.String() }),
  retry: retrySchedule([30 * SECOND, 2 * MINUTE, 10 * MINUTE, HOUR, 4 * HOUR]),
  timeoutMs: 60 * SECOND,
});

/** Fails an onboarding whose history never finished arriving. */
export const connectionOnboardingDeadline = defineJob({
  name: 'connection.onboarding_deadline',
  payload: Type.Object({ connection_id: Type.String() }),
  retry: retrySchedule([MINUTE, 10 * MINUTE]),
  timeoutMs: 30 * SECOND,
});

/**
 * Sends one stored outbound message to the provider. A throttle or an outage is retried on this
 * schedule; a send that timed out is retried only after `SEND_TIMEOUT_GRACE_MS`, in which a status
 * naming the message proves it went out (see docs/messages.md).
 */
export const messageSend = defineJob({
  name: 'message.send',
  payload: Type.Object({ message_id: Type.String() }),
  retry: retrySchedule([2 * SECOND, 10 * SECOND, 30 * SECOND, 2 * MINUTE, 10 * MINUTE, 30 * MINUTE], { jitter: 0.2 }),
  // Waiting for a pacing slot, uploading media (up to 100 MiB) and the send itself.
  timeoutMs: 5 * MINUTE,
});

/**
 * Sends one notification's message, at its `due_at`. A throttle or an outage puts it back to queued
 * and is retried on this schedule while the notification has time left; its expiry ends it otherwise.
 */
export const notificationSend = defineJob({
  name: 'notification.send',
  payload: Type.Object({ notification_id: Type.String() }),
  retry: retrySchedule([2 * SECOND, 10 * SECOND, 30 * SECOND, MINUTE, 2 * MINUTE, 5 * MINUTE, 10 * MINUTE, 30 * MINUTE, HOUR, 2 * HOUR], { jitter: 0.2 }),
  // Waiting for a pacing slot (at most 10 s) and the send itself.
  timeoutMs: MINUTE,
});

/** Ends, at its `expires_at`, a notification (or each one of a batch) still waiting to be sent. */
export const notificationExpire = defineJob({
  name: 'notification.expire',
  payload: Type.Object({ notification_id: Type.Optional(Type.String()), batch_id: Type.Optional(Type.String()) }),
  retry: retrySchedule([5 * SECOND, 30 * SECOND, 2 * MINUTE, 10 * MINUTE]),
  timeoutMs: MINUTE,
});

/**
 * Warns that a conversation's 24-hour window closes in an hour. One timer per closing time, keyed by
 * it; the handler re-reads the conversation, so a timer whose window moved or closed does nothing.
 */
export const conversationWindowExpiring = defineJob({
  name: 'conversation.window_expiring',
  payload: Type.Object({ conversation_id: Type.String(), expires_at: Type.String() }),
  // A warning is worth retrying only within its hour; the handler drops it once the window closed.
  retry: retrySchedule([30 * SECOND, 2 * MINUTE, 10 * MINUTE]),
  timeoutMs: 30 * SECOND,
});

/**
 * Fetches the bytes of a media a customer sent into the media storage. The provider keeps them for
 * 7 days, so the schedule gives up within hours; the handler skips media no longer pending.
 */
export const mediaFetch = defineJob({
  name: 'media.fetch',
  payload: Type.Object({ media_id: Type.String() }),
  retry: retrySchedule([10 * SECOND, MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * HOUR]),
  // Up to 100 MB from the provider's CDN. Longer than a worker's lease: a second worker taking the
  // job over writes the same bytes under the same key, which is harmless.
  timeoutMs: 5 * MINUTE,
});

/**
 * Ends a conversation lock at its deadline: `expired` at its TTL, `idle` when its holder stopped
 * renewing. One timer per deadline, keyed by it; the handler re-reads the lock, so a timer whose lock
 * was renewed, transferred or released since does nothing.
 */
export const conversationLockExpire = defineJob({
  name: 'conversation_lock.expire',
  payload: Type.Object({ lock_id: Type.String(), ends_at: Type.String() }),
  // Reads already treat a lapsed lock as free; retrying only gets the event out.
  retry: retrySchedule([5 * SECOND, 30 * SECOND, 2 * MINUTE, 10 * MINUTE]),
  timeoutMs: 30 * SECOND,
});

/**
 * Fires one occurrence of a schedule and queues the next. Exactly one is queued per schedule, keyed
 * by its slot and the schedule's revision (`scheduleFireKey`); the handler drops a job whose schedule
 * is no longer active or has changed since, so an edit only has to queue the job of the new revision.
 */
export const scheduleFire = defineJob({
  name: 'schedule.fire',
  payload: Type.Object({ schedule_id: Type.String(), scheduled_for: Type.String(), revision: Type.Integer() }),
  // Only a store failure or a bug fails a fire (a refused target is recorded on the occurrence); the
  // catch-up window decides, when it finally runs, whether the slot still fires or is recorded missed.
  retry: retrySchedule([5 * SECOND, 30 * SECOND, 2 * MINUTE, 10 * MINUTE, 30 * MINUTE, HOUR, 4 * HOUR, 12 * HOUR]),
  // Creating up to 1,000 notifications in one transaction.
  timeoutMs: 2 * MINUTE,
});

/**
 * The dedupe key of a schedule's fire job. The revision is part of it: an edit made while the job of
 * the same slot is running (so it cannot be cancelled) must still be able to queue that slot again
 * for the new revision, which the running one, seeing the revision changed, leaves alone.
 */
export function scheduleFireKey(scheduleId: string, scheduledFor: string, revision: number): string {
  return `${scheduleId}:${scheduledFor}:${revision}`;
}

/**
 * Executes one step of a run, or wakes it at a deadline (a wait's time-out, a delay's end). The job
 * carries the run's `seq` when it was queued: the handler locks the run and acts only while the run's
 * `seq` is still that (compare-and-set), so a stale or repeated job does nothing. Deduplicated by
 * `runStepKey`. A failure is retried; the last one fails the run.
 */
export const runStep = defineJob({
  name: 'run.step',
  payload: Type.Object({ run_id: Type.String(), seq: Type.Integer() }),
  retry: retrySchedule([2 * SECOND, 10 * SECOND, 30 * SECOND, 2 * MINUTE, 10 * MINUTE], { jitter: 0.2 }),
  timeoutMs: MINUTE,
});

export function runStepKey(runId: string, seq: number): string {
  return `run.step:${runId}:${seq}`;
}

/** Ends a run still active at its `timeout_at` (`timed_out`). One per run, keyed by it. */
export const runTimeout = defineJob({
  name: 'run.timeout',
  payload: Type.Object({ run_id: Type.String() }),
  retry: retrySchedule([5 * SECOND, 30 * SECOND, 2 * MINUTE, 10 * MINUTE]),
  timeoutMs: 30 * SECOND,
});

export function runTimeoutKey(runId: string): string {
  return `run.timeout:${runId}`;
}

/**
 * Expires an approval still pending at its `expires_at`, and moves its run onto the `expired`
 * branch. Compare-and-set: an approval decided or canceled meanwhile is left as it is. One per
 * approval, keyed by it; a decision or a cancel removes it.
 */
export const approvalExpire = defineJob({
  name: 'approval.expire',
  payload: Type.Object({ approval_id: Type.String() }),
  retry: retrySchedule([5 * SECOND, 30 * SECOND, 2 * MINUTE, 10 * MINUTE]),
  timeoutMs: 30 * SECOND,
});

export function approvalExpireKey(approvalId: string): string {
  return `approval.expire:${approvalId}`;
}

/**
 * Applies one Stripe event, stored as received: the webhook was answered before this ran. The handler
 * re-reads the subscription from Stripe, since events arrive out of order.
 */
export const billingStripeEvent = defineJob({
  name: 'billing.stripe_event',
  payload: Type.Object({ event_id: Type.String() }),
  retry: retrySchedule([5 * SECOND, 30 * SECOND, 2 * MINUTE, 10 * MINUTE, HOUR, 4 * HOUR, 12 * HOUR]),
  // A few reads from Stripe (the SDK waits at most 20 s for each).
  timeoutMs: 2 * MINUTE,
});

/**
 * Reports each Stripe-billed organization's messages of the past hour as a Billing Meter event,
 * identified by organization and hour; a retry re-sends the frozen quantity under the same identifier.
 */
export const billingMeterReport = defineRecurringJob({
  name: 'billing.meter_report',
  every: HOUR,
  retry: retrySchedule([MINUTE, 5 * MINUTE, 15 * MINUTE]),
  timeoutMs: 10 * MINUTE,
});

/**
 * Recurring maintenance, one job per hour-slot (see scheduler.ts). Each deletes in bounded batches
 * for at most `PURGE_BUDGET_MS` and leaves the rest to the next hour; a failed run is retried within
 * the hour, and the next slot catches up in any case.
 */
const MAINTENANCE = { every: HOUR, retry: retrySchedule([MINUTE, 10 * MINUTE]), timeoutMs: MINUTE } as const;

/** Deletes idempotency keys past their 24 hours (`IDEMPOTENCY_RETENTION_MS`). */
export const idempotencyKeyPurge = defineRecurringJob({ name: 'idempotency_key.purge', ...MAINTENANCE });

/** Deletes webhook delivery attempts past `DELIVERY_RETENTION_MS`, never one whose retry is still ahead. */
export const webhookDeliveryPurge = defineRecurringJob({ name: 'webhook_delivery.purge', ...MAINTENANCE });

/** Deletes run event-log entries past `RUN_EVENT_RETENTION` (30 days). */
export const runEventPurge = defineRecurringJob({ name: 'run_event.purge', ...MAINTENANCE });

/** Forgets which contacts each number wrote to before the last 24 hours (`unique_recipients_24h`, docs/usage.md). */
export const usageRecipientPurge = defineRecurringJob({ name: 'usage_recipient.purge', ...MAINTENANCE });

/** Deletes expired authorization codes and refresh tokens, OAuth clients unused for 30 days and grants dead for 30 days (docs/oauth.md). */
export const oauthPurge = defineRecurringJob({ name: 'oauth.purge', ...MAINTENANCE });

/**
 * Deletes finished jobs past `FINISHED_JOB_RETENTION`, and warns of queued jobs that no version of
 * the service seems to know (overdue by an hour, of a name not in this catalogue).
 */
export const jobPurge = defineRecurringJob({ name: 'job.purge', ...MAINTENANCE });

export const JOBS = [
  webhookDelivery,
  mailSend,
  providerWebhookProcess,
  connectionOnboard,
  connectionOnboardingDeadline,
  messageSend,
  notificationSend,
  notificationExpire,
  conversationWindowExpiring,
  mediaFetch,
  conversationLockExpire,
  scheduleFire,
  runStep,
  runTimeout,
  approvalExpire,
  billingStripeEvent,
  billingMeterReport,
  idempotencyKeyPurge,
  webhookDeliveryPurge,
  runEventPurge,
  usageRecipientPurge,
  oauthPurge,
  jobPurge,
] as const;
