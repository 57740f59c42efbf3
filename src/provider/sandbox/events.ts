import type { Clock } from '../../lib/clock.ts';
import type { Behaviour, SandboxMessage, SandboxNumber, SandboxState } from './state.ts';
import type { SandboxTemplate, TemplateEvent, TemplateStatus, TemplateStore } from './templates.ts';
import {
  messagesWebhook,
  numberMetadata,
  providerErrorObject,
  statusObject,
  webhookEnvelope,
  type ProviderErrorObject,
  type StatusName,
  type WebhookDelivery,
  type WebhookSender,
  type WebhookTarget,
} from './webhooks.ts';

/**
 * Everything the simulated provider tells the service, as signed webhooks: messages and statuses,
 * the status walk, template, quality and account notifications. A webhook goes out only while an
 * app is subscribed to the account (§7.3), to its override callback if it set one.
 */
export function createSandboxEvents(deps: {
  state: SandboxState;
  templates: TemplateStore;
  sender: WebhookSender;
  clock: Clock;
  webhookUrl: () => string | undefined;
  stepMs: number;
}) {
  const { state, sender, clock } = deps;

  async function targetFor(wabaId: string): Promise<WebhookTarget> {
    const [subscription] = await state.subscriptions(wabaId);
    if (subscription === undefined) return { skip: `no app is subscribed to account ${wabaId} (POST /{waba_id}/subscribed_apps): not sent` };
    const url = subscription.overrideCallbackUri ?? deps.webhookUrl();
    return url === undefined ? { skip: 'no webhook URL is configured' } : { url };
  }

  async function numberOf(message: SandboxMessage): Promise<SandboxNumber> {
    const number = await state.findNumber(message.phoneNumberId);
    if (number === undefined) throw new Error(`sandbox message ${message.id} belongs to no number`);
    return number;
  }

  /** One `messages` webhook for the number; resolves once it has been attempted. */
  async function messages(number: SandboxNumber, value: Record<string, unknown>, target?: WebhookTarget): Promise<WebhookDelivery> {
    return sender.send(messagesWebhook(number, value), target ?? (await targetFor(number.wabaId)));
  }

  /** A number-scoped field other than `messages` (history, echoes, state sync). */
  async function numberField(number: SandboxNumber, field: string, value: Record<string, unknown>): Promise<WebhookDelivery> {
    return sender.send(webhookEnvelope(number.wabaId, field, { ...numberMetadata(number), ...value }, clock.now()), await targetFor(number.wabaId));
  }

  /** An account-scoped field: the data sits directly in `value`. */
  async function accountField(wabaId: string, field: string, value: Record<string, unknown>): Promise<WebhookDelivery> {
    return sender.send(webhookEnvelope(wabaId, field, value, clock.now()), await targetFor(wabaId));
  }

  async function emitStatus(
    message: SandboxMessage,
    status: StatusName,
    error?: ProviderErrorObject,
    known: { number?: SandboxNumber; target?: WebhookTarget } = {},
  ): Promise<WebhookDelivery> {
    return messages(known.number ?? (await numberOf(message)), { statuses: [statusObject(message, status, clock.now(), error)] }, known.target);
  }

  // Each step is queued only after the previous one was attempted, and the first only after a
  // timer tick, so the send's HTTP response always leaves before its first status webhook. The
  // sending number is the caller's, and where the webhooks go is read once for the whole walk.
  function walk(message: SandboxMessage, number: SandboxNumber): void {
    const steps: StatusName[] = ['sent', 'delivered', 'read'];
    let target: WebhookTarget | undefined;
    const next = async (): Promise<void> => {
      const status = steps.shift();
      if (status === undefined) return;
      target ??= await targetFor(number.wabaId);
      await emitStatus(message, status, undefined, { number, target });
      sender.later(deps.stepMs, next);
    };
    sender.later(deps.stepMs, next);
  }

  /** The asynchronous failure path (§8.3): the send was answered 200, then a `failed` status arrives. */
  function failLater(message: SandboxMessage, number: SandboxNumber, code: number, details: string): void {
    sender.later(deps.stepMs, () => emitStatus(message, 'failed', providerErrorObject(code, details), { number }));
  }

  /**
   * Applies a template event and notifies it; FLAGGED and LOCKED notify without changing the status.
   * Answers the template as it now is.
   */
  async function templateStatus(
    template: SandboxTemplate,
    event: TemplateEvent,
    reason: string | null,
  ): Promise<{ template: SandboxTemplate; delivery: WebhookDelivery }> {
    const previous = template.status;
    const next: TemplateStatus | undefined =
      event === 'REINSTATED' || event === 'UNARCHIVED' ? 'APPROVED' : event === 'FLAGGED' || event === 'LOCKED' ? undefined : event;
    const updated: SandboxTemplate = { ...template, status: next ?? previous, reason };
    if (next === 'DELETED') await deps.templates.remove(template.id);
    else await deps.templates.update(template.id, { status: updated.status, reason });
    const now = clock.now();
    const value: Record<string, unknown> = {
      event,
      message_template_id: Number(template.id),
      message_template_name: template.name,
      message_template_language: template.language,
      reason,
      message_template_category: template.category,
      ...(event === 'PAUSED' ? { other_info: { title: 'FIRST_PAUSE', description: 'Paused because of low quality feedback from users.' } } : {}),
      ...(previous === 'PAUSED' && next === 'APPROVED' ? { other_info: { title: 'UNPAUSE', description: 'The template is no longer paused.' } } : {}),
      ...(event === 'DISABLED' ? { disable_info: { disable_date: Math.floor(now.getTime() / 1000) } } : {}),
      ...(event === 'REJECTED'
        ? { rejection_info: { reason: reason ?? 'INVALID_FORMAT', recommendation: 'Review the template guidelines and submit a corrected template.' } }
        : {}),
    };
    return { template: updated, delivery: await accountField(template.wabaId, 'message_template_status_update', value) };
  }

  /** The provider's review of a new template when `behaviour.template_review` is not manual. */
  function review(template: SandboxTemplate, behaviour: Behaviour): void {
    const decision = behaviour.templateReview;
    if (decision === 'manual') return;
    sender.later(deps.stepMs, async () => {
      // Whatever happened to it meanwhile (a control call, a delete) wins over the review.
      const current = await deps.templates.find(template.id);
      if (current?.status !== 'PENDING') return;
      await templateStatus(current, decision === 'approve' ? 'APPROVED' : 'REJECTED', decision === 'approve' ? null : 'INVALID_FORMAT');
    });
  }

  return { messages, numberField, accountField, emitStatus, walk, failLater, templateStatus, review };
}

export type SandboxEvents = ReturnType<typeof createSandboxEvents>;
