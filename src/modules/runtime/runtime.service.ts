import { AppError, invalidParam } from '../../lib/errors.ts';
import { PacingQueueFullError, type Pacer } from '../../provider/pacing.ts';
import { isProviderError, providerErrorToAppError } from '../../provider/provider.ts';
import {
  bodyLimitFor,
  isSend,
  parseGraphTarget,
  RelayBodyTooLargeError,
  RelayUploadStalledError,
  type GraphRelay,
  type GraphTarget,
  type RelayAnswer,
  type RelayMethod,
} from '../../provider/whatsapp/relay.ts';
import type { ConnectionsService } from '../connections/index.ts';
import type { Principal } from '../credentials/principal.ts';

export interface RuntimeLog {
  warn(details: object, message: string): void;
}

export interface RuntimeServiceDeps {
  connections: Pick<ConnectionsService, 'providerAccess' | 'reportProviderError'>;
  relay: Pick<GraphRelay, 'relay'>;
  /** Paces sends (`POST /{phone_number_id}/messages`) to the connection's throughput ceiling. */
  pacer: Pick<Pacer, 'acquire'>;
  log: RuntimeLog;
}

type Headers = Readonly<Record<string, string | string[] | undefined>>;

/** A request that passed the checks made before its body is read. */
export interface CheckedRequest {
  target: GraphTarget;
  maxBodyBytes: number;
}

export interface RuntimeCall extends CheckedRequest {
  method: RelayMethod;
  headers: Headers;
  body?: AsyncIterable<Uint8Array> | undefined;
}

function headerOf(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** A `validation_failed` for a parameter the runtime does not take, with the message as given. */
function refused(param: string, message: string): AppError {
  return new AppError('validation_failed', message, { param, details: [{ param, code: 'not_allowed', message }] });
}

function megabytes(bytes: number): string {
  return `${bytes / 1024 / 1024} MiB`;
}

/**
 * The runtime surface's rules: which connection a key relays for, what its path may address, which
 * calls are paced, and what a provider answer or fault becomes. The provider's URLs, headers and
 * error codes are the relay's (provider/whatsapp/relay.ts).
 */
export function createRuntimeService(deps: RuntimeServiceDeps) {
  const { connections, relay, pacer, log } = deps;

  /**
   * The checks that need neither the store nor the body, made before the body is read: the path's
   * shape, the query, the headers and the declared length.
   */
  function check(target: string, headers: Headers): CheckedRequest {
    const parsed = parseGraphTarget(target);
    if ('refused' in parsed) {
      // Every path the runtime will not relay answers like an id of another connection: 404, whatever
      // the reason, so a refusal tells nothing about what exists at the provider.
      if (parsed.refused === 'path') throw new AppError('resource_not_found', parsed.message);
      throw refused(parsed.parameter === '' ? '/query' : `/query/${parsed.parameter}`, parsed.message);
    }
    if (headerOf(headers, 'idempotency-key') !== undefined) {
      throw refused(
        '/header/idempotency-key',
        'The runtime relays each request as it is and keeps no record to replay, so it takes no Idempotency-Key; send through POST /v1/messages for retry-safe sends.',
      );
    }
    const contentType = headerOf(headers, 'content-type');
    const maxBodyBytes = bodyLimitFor(contentType);
    const declared = headerOf(headers, 'content-length');
    if (declared !== undefined && Number(declared) > maxBodyBytes) {
      throw new AppError(
        'body_too_large',
        `The body is ${declared} bytes; the runtime relays at most ${megabytes(maxBodyBytes)} for ${contentType ?? 'a body without a Content-Type'} (multipart media uploads: ${megabytes(bodyLimitFor('multipart/form-data'))}).`,
      );
    }
    return { target: parsed, maxBodyBytes };
  }

  async function pace(phoneNumberId: string, perSecond: number): Promise<void> {
    try {
      await pacer.acquire(phoneNumberId, perSecond);
    } catch (error) {
      if (!(error instanceof PacingQueueFullError)) throw error;
      const retryAfter = Math.max(1, Math.ceil((error.waitMs - error.maxWaitMs) / 1000));
      throw new AppError(
        'provider_throttled',
        `This number's sends are queued ${Math.ceil(error.waitMs / 1000)} s ahead at its ceiling of ${perSecond} a second; retry in ${retryAfter} s.`,
        {
          headers: { 'retry-after': String(retryAfter) },
          cause: error,
        },
      );
    }
  }

  /** Relays a checked request for the key's connection and returns the provider's answer as it came. */
  async function relayCall(principal: Principal, call: RuntimeCall): Promise<RelayAnswer> {
    // The route admits connection keys only; anything else has no connection to relay for.
    if (principal.connectionId === null) throw new AppError('credential_kind_not_allowed', 'The runtime surface takes connection keys only.');
    const access = await connections.providerAccess(principal, principal.connectionId);
    const { phoneNumberId, wabaId } = access.credentials;
    const node = call.target.segments[0];
    if (node !== phoneNumberId && node !== wabaId) {
      throw new AppError('resource_not_found', "The runtime path must start with this connection's phone number id or WhatsApp Business Account id.");
    }
    if (isSend(call.method, call.target, phoneNumberId)) await pace(phoneNumberId, access.throughputPerSecond);

    let answer: RelayAnswer;
    try {
      answer = await relay.relay({
        method: call.method,
        target: call.target,
        accessToken: access.credentials.accessToken,
        headers: call.headers,
        body: call.body,
        maxBodyBytes: call.maxBodyBytes,
      });
    } catch (error) {
      if (error instanceof RelayBodyTooLargeError) {
        throw new AppError(
          'body_too_large',
          `The body grew past the ${megabytes(error.maxBytes)} the runtime relays for its Content-Type; the provider's request was abandoned.`,
          { cause: error },
        );
      }
      if (error instanceof RelayUploadStalledError) {
        throw invalidParam('/body', `stopped arriving for more than ${error.idleMs} ms, so the provider's request was abandoned`, 'upload_stalled');
      }
      if (isProviderError(error)) throw providerErrorToAppError(error);
      throw error;
    }

    if (answer.failure) {
      // An expired token turns the connection needs_reauth; the caller still gets the provider's answer.
      try {
        await connections.reportProviderError(access.connectionId, answer.failure);
      } catch (error) {
        log.warn({ err: error, connection_id: access.connectionId }, 'could not record a provider error seen on the runtime surface');
      }
    }
    return answer;
  }

  return { check, relay: relayCall };
}

export type RuntimeService = ReturnType<typeof createRuntimeService>;
