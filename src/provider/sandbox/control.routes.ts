import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import Type, { type Static, type TSchema } from 'typebox';
import { Value } from 'typebox/value';
import type { SandboxMessage, SandboxNumber, SandboxState } from './state.ts';
import { STATUSES, providerErrorObject, unixSeconds, type StatusName, type WebhookDelivery } from './webhooks.ts';

const Loose = Type.Record(Type.String(), Type.Unknown());

export const InboundSchema = Type.Object(
  {
    phone_number_id: Type.String({ minLength: 1 }),
    from: Type.String({ pattern: '^\\+?[0-9]{6,15}$' }),
    type: Type.String({ minLength: 1 }),
    /** The sender's profile name, shown in `contacts[].profile.name`. */
    name: Type.Optional(Type.String()),
    text: Type.Optional(Type.String()),
    image: Type.Optional(Loose),
    video: Type.Optional(Loose),
    audio: Type.Optional(Loose),
    document: Type.Optional(Loose),
    sticker: Type.Optional(Loose),
    location: Type.Optional(Type.Object({ latitude: Type.Number(), longitude: Type.Number(), name: Type.Optional(Type.String()), address: Type.Optional(Type.String()) })),
    interactive: Type.Optional(Loose),
    button: Type.Optional(Type.Object({ text: Type.String(), payload: Type.String() })),
    reaction: Type.Optional(Type.Object({ message_id: Type.String(), emoji: Type.Optional(Type.String()) })),
    contacts: Type.Optional(Type.Array(Loose)),
    /** Makes the message a quoted reply to this (business-sent) message id. */
    context: Type.Optional(Type.Object({ message_id: Type.String() })),
  },
  { additionalProperties: false },
);
export type Inbound = Static<typeof InboundSchema>;

export const ControlStatusSchema = Type.Object(
  {
    message_id: Type.String({ minLength: 1 }),
    status: Type.Union(STATUSES.map((status) => Type.Literal(status))),
    error: Type.Optional(Type.Object({ code: Type.Integer(), title: Type.Optional(Type.String()), details: Type.Optional(Type.String()) }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);

export const BehaviourSchema = Type.Object(
  {
    latency_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 60_000 })),
    fail_next: Type.Optional(
      Type.Union([
        Type.Object(
          { code: Type.Integer(), http_status: Type.Optional(Type.Integer({ minimum: 400, maximum: 599 })), details: Type.Optional(Type.String()) },
          { additionalProperties: false },
        ),
        Type.Null(),
      ]),
    ),
    auto_status: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

/** Inbound types the sandbox forwards as themselves; any other type arrives as `unsupported` (§3.2). */
const SUPPORTED_INBOUND = ['text', 'image', 'video', 'audio', 'document', 'sticker', 'location', 'interactive', 'button', 'reaction', 'contacts'];
const MEDIA_DEFAULT_MIME: Readonly<Record<string, string>> = {
  image: 'image/jpeg',
  video: 'video/mp4',
  audio: 'audio/ogg; codecs=opus',
  document: 'application/pdf',
  sticker: 'image/webp',
};

class ControlError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: unknown;

  constructor(status: number, code: string, message: string, details?: unknown) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

function check<T extends TSchema>(schema: T, body: unknown): Static<T> {
  if (Value.Check(schema, body)) return body;
  const details = Value.Errors(schema, body).map((error) => ({ param: error.instancePath || '/', message: error.message }));
  throw new ControlError(400, 'validation_failed', 'The request body is not valid for this control endpoint.', details);
}

export interface ControlDeps {
  state: SandboxState;
  /** Queues one `messages` webhook for the number and resolves once it has been attempted. */
  deliver(number: SandboxNumber, value: Record<string, unknown>): Promise<WebhookDelivery>;
  emitStatus(message: SandboxMessage, status: StatusName, error?: ReturnType<typeof providerErrorObject>): Promise<WebhookDelivery>;
  deliveries: readonly WebhookDelivery[];
}

function deliveryReport(delivery: WebhookDelivery): Record<string, unknown> {
  return { status: delivery.status ?? null, ...(delivery.error === undefined ? {} : { error: delivery.error }) };
}

function inboundMessage(input: Inbound, number: SandboxNumber, message: SandboxMessage): Record<string, unknown> {
  const base: Record<string, unknown> = {
    from: message.waId,
    id: message.id,
    timestamp: unixSeconds(message.createdAt),
    ...(input.context === undefined ? {} : { context: { from: number.displayPhoneNumber.replace(/\D/g, ''), id: input.context.message_id } }),
  };
  if (!SUPPORTED_INBOUND.includes(input.type)) {
    return {
      ...base,
      type: 'unsupported',
      unsupported: { type: input.type },
      errors: [providerErrorObject(131051, 'Message type is currently not supported.', 'Message type unknown')],
    };
  }
  let payload: unknown;
  if (input.type === 'text') {
    if (input.text === undefined) throw new ControlError(400, 'validation_failed', 'A text inbound message needs `text`.');
    payload = { body: input.text };
  } else {
    payload = input[input.type as keyof Inbound];
    if (payload === undefined) throw new ControlError(400, 'validation_failed', `A ${input.type} inbound message needs \`${input.type}\`.`);
    const mime = MEDIA_DEFAULT_MIME[input.type];
    if (mime !== undefined) {
      const media = payload as Record<string, unknown>;
      if (typeof media.id !== 'string') throw new ControlError(400, 'validation_failed', `\`${input.type}.id\` (a media id) is required.`);
      // Received media always carries a MIME type and a digest; fill them in so tests need not.
      payload = { mime_type: mime, sha256: 'sandbox-sha256-not-computed', ...(input.type === 'audio' ? { voice: false } : {}), ...media };
    }
  }
  return { ...base, type: input.type, [input.type]: payload };
}

/** The sandbox's own control API under `/control`: makes the simulated world act on the service. */
export function controlRoutes(deps: ControlDeps) {
  const { state } = deps;

  return async function register(app: FastifyInstance): Promise<void> {
    app.setErrorHandler((error: FastifyError | ControlError, _request: FastifyRequest, reply: FastifyReply) => {
      if (error instanceof ControlError) {
        return reply.status(error.status).send({ error: { code: error.code, message: error.message, ...(error.details === undefined ? {} : { details: error.details }) } });
      }
      const status = error.statusCode ?? 500;
      return reply.status(status).send({ error: { code: status < 500 ? 'validation_failed' : 'internal_error', message: error.message } });
    });

    app.get('/numbers', async () => ({
      data: [...state.numbers.values()].map((number) => ({
        phone_number_id: number.phoneNumberId,
        waba_id: number.wabaId,
        display_phone_number: number.displayPhoneNumber,
      })),
    }));

    app.get('/webhooks', async () => ({
      data: deps.deliveries.map((delivery) => ({ ...deliveryReport(delivery), at: delivery.at.toISOString(), body: JSON.parse(delivery.body) as unknown })),
    }));

    app.post('/inbound', async (request) => {
      const input = check(InboundSchema, request.body);
      const number = state.numbers.get(input.phone_number_id);
      if (number === undefined) throw new ControlError(404, 'not_found', `No sandbox number ${input.phone_number_id}; exchange a code first.`);
      const waId = input.from.replace(/\D/g, '');
      // Any user message, even one the provider cannot render, opens the 24-hour window (§9).
      const message = state.recordInbound(number.phoneNumberId, waId, input.type);
      const value = {
        contacts: [{ profile: { name: input.name ?? 'Sandbox User' }, wa_id: waId }],
        messages: [inboundMessage(input, number, message)],
      };
      const delivery = await deps.deliver(number, value);
      return { message_id: message.id, delivery: deliveryReport(delivery) };
    });

    app.post('/status', async (request) => {
      const input = check(ControlStatusSchema, request.body);
      const message = state.findMessage(input.message_id);
      if (message === undefined || message.direction !== 'outbound') {
        throw new ControlError(404, 'not_found', `No outbound message ${input.message_id} in the sandbox.`);
      }
      const error =
        input.status === 'failed' || input.error !== undefined
          ? providerErrorObject(input.error?.code ?? 131000, input.error?.details ?? 'Injected by the sandbox control API.', input.error?.title)
          : undefined;
      const delivery = await deps.emitStatus(message, input.status, error);
      return { message_id: message.id, status: input.status, delivery: deliveryReport(delivery) };
    });

    app.post('/behaviour', async (request) => {
      const input = check(BehaviourSchema, request.body ?? {});
      if (input.latency_ms !== undefined) state.behaviour.latencyMs = input.latency_ms;
      if (input.auto_status !== undefined) state.behaviour.autoStatus = input.auto_status;
      if (input.fail_next !== undefined) {
        state.behaviour.failNext =
          input.fail_next === null
            ? undefined
            : {
                code: input.fail_next.code,
                ...(input.fail_next.http_status === undefined ? {} : { httpStatus: input.fail_next.http_status }),
                ...(input.fail_next.details === undefined ? {} : { details: input.fail_next.details }),
              };
      }
      const { latencyMs, failNext, autoStatus } = state.behaviour;
      return {
        latency_ms: latencyMs,
        fail_next: failNext === undefined ? null : { code: failNext.code, http_status: failNext.httpStatus ?? null, details: failNext.details ?? null },
        auto_status: autoStatus,
      };
    });
  };
}
