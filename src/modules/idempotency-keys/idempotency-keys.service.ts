import type { Db } from '../../db/connect.ts';
import { purgeInBatches, type PurgeOptions, type PurgeResult } from '../../jobs/purge.ts';
import { DAY, SECOND, type Clock } from '../../lib/clock.ts';
import { randomToken, sha256Hex, type SecretBox } from '../../lib/crypto.ts';
import { AppError, ERROR_CODES } from '../../lib/errors.ts';
import type { IdempotencyKeysTable } from '../../db/schema.ts';
import type { Mode } from '../credentials/scopes.schemas.ts';
import type { IdempotencyKeysStore, KeyScope } from './idempotency-keys.store.ts';

/** What a route declares: `required` for send endpoints, where a retry must never send twice. */
export type IdempotencyRequirement = 'required' | 'optional';

export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;
/** The spec's retention: a key answers with its first response for 24 hours after it was first used. */
export const IDEMPOTENCY_RETENTION_MS = DAY;
/**
 * An in-flight key whose lock is older than this is presumed orphaned by a process that died
 * mid-request, and the next request with the same key and body takes it over. It must stay well above
 * the longest time a request can legitimately run (provider calls time out after 10 s), or a slow
 * first execution could be overtaken and run twice.
 */
export const IDEMPOTENCY_LOCK_TIMEOUT_MS = 60 * SECOND;

// A claim can lose its race to a row that then disappears (released after a 5xx, or expired and
// deleted); a few fresh attempts settle it, and past them the key is plainly busy.
const CLAIM_ATTEMPTS = 3;

const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

/** Everything that makes two requests "the same request" for a key. */
export interface RequestFingerprint {
  method: string;
  /** The route's URL pattern (`/v1/api-keys/:id/revoke`); with `params` it is the path as sent. */
  route: string;
  params: unknown;
  query: unknown;
  /** The body as parsed and validated, so formatting and key order do not matter. */
  body: unknown;
}

/**
 * How a request's key is kept. `with-work`: the request runs in one transaction (every write route
 * but those that call out), and its answer is written in that transaction, so the work and its answer
 * commit together or not at all. `own-commits`: a route that calls a remote service during the request
 * claims the key in a commit of its own and answers it in another; a crash between the two leaves the
 * key in flight until `IDEMPOTENCY_LOCK_TIMEOUT_MS`.
 */
export type KeyHandling = 'with-work' | 'own-commits';

/** The right to execute a request for a key, and to record its response. */
export interface Claim {
  readonly scope: KeyScope;
  readonly handling: KeyHandling;
  readonly requestHash: string;
  /** The holder's token; `own-commits` only (a `with-work` claim holds no row until it answers). */
  readonly lockToken: string | undefined;
}

export type Begin = { readonly kind: 'execute'; readonly claim: Claim } | { readonly kind: 'replay'; readonly status: number; readonly body: string };

export interface ResponseRecord {
  status: number;
  /** The serialized body; undefined when it could not be captured (a stream). */
  body: string | undefined;
  /** The `error.code` of an error response. */
  errorCode: string | undefined;
}

export type Finish = 'stored' | 'released' | 'lost';

/**
 * JSON with every object's keys sorted, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are one text. Arrays
 * keep their order: in a body, order there is meaning.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value ?? null, (_key, item: unknown) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) return item;
    const entries = Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return Object.fromEntries(entries);
  });
}

export function requestHash(request: RequestFingerprint): string {
  return sha256Hex(canonicalJson([request.method.toUpperCase(), request.route, request.params ?? {}, request.query ?? {}, request.body ?? null]));
}

/**
 * Whether a response is the request's final answer, to be replayed for 24 hours. Not final: a 5xx
 * (the service failed, and its transaction rolled back), an error the catalogue calls retryable
 * (replaying "try again later" for a day would make it false), and `validation_failed` (a request
 * that fails validation stores nothing, wherever the rule that refused it lives).
 */
export function isFinalResponse(status: number, errorCode: string | undefined): boolean {
  if (status >= 500) return false;
  if (errorCode === undefined || !Object.hasOwn(ERROR_CODES, errorCode)) return true;
  const definition = ERROR_CODES[errorCode as keyof typeof ERROR_CODES];
  return !definition.retryable && errorCode !== 'validation_failed';
}

export function createIdempotencyKeysService(deps: {
  db: Db;
  store: IdempotencyKeysStore;
  clock: Clock;
  isUniqueViolation: (error: unknown) => boolean;
  /**
   * Seals stored bodies: a replayable response can carry a secret shown only once (a new API key, a
   * signing secret), which must not sit readable in the table for 24 hours.
   */
  secrets: Pick<SecretBox, 'seal' | 'open'>;
  lockTimeoutMs?: number;
}) {
  const { db, store, clock, isUniqueViolation, secrets } = deps;
  const lockTimeoutMs = deps.lockTimeoutMs ?? IDEMPOTENCY_LOCK_TIMEOUT_MS;

  function reuse(key: string): AppError {
    return new AppError(
      'idempotency_key_reuse',
      `The Idempotency-Key "${key}" was already used with a different request (method, path or body); use a new key for a new request.`,
      {
        param: '/header/idempotency-key',
        extra: { idempotency_key: key },
      },
    );
  }

  function inFlight(key: string): AppError {
    return new AppError(
      'idempotency_key_in_flight',
      `A request with the Idempotency-Key "${key}" is still being processed; retry in a second to get its response.`,
      {
        param: '/header/idempotency-key',
        extra: { idempotency_key: key },
        headers: { 'retry-after': '1' },
      },
    );
  }

  function replayOrRefuse(existing: IdempotencyKeysTable, hash: string, now: Date): Begin | 'stale' {
    if (existing.request_hash !== hash) throw reuse(existing.key);
    if (existing.completed_at !== null && existing.response_status !== null) {
      return { kind: 'replay', status: existing.response_status, body: existing.response_body === null ? '' : secrets.open(existing.response_body) };
    }
    if (Date.parse(existing.locked_at) + lockTimeoutMs <= now.getTime()) return 'stale';
    throw inFlight(existing.key);
  }

  /**
   * `own-commits`: the insert is the claim, committed at once: the primary key on (organization,
   * mode, key) lets exactly one of any number of concurrent first requests in, on one process or many.
   */
  async function claimInOwnCommit(scope: KeyScope, hash: string, now: Date): Promise<Begin> {
    const at = now.toISOString();
    const expiresAt = new Date(now.getTime() + IDEMPOTENCY_RETENTION_MS).toISOString();
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const lockToken = randomToken(16);
      try {
        await store.insert(db, {
          organization_id: scope.organizationId,
          mode: scope.mode,
          key: scope.key,
          request_hash: hash,
          lock_token: lockToken,
          locked_at: at,
          response_status: null,
          response_body: null,
          created_at: at,
          completed_at: null,
          expires_at: expiresAt,
        });
        return { kind: 'execute', claim: { scope, handling: 'own-commits', requestHash: hash, lockToken } };
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
      }

      const existing = await store.find(db, scope);
      if (!existing) continue;
      if (existing.expires_at <= at) {
        await store.deleteIfExpired(db, scope, at);
        continue;
      }
      const found = replayOrRefuse(existing, hash, now);
      if (found !== 'stale') return found;
      const takeOver = { lockToken: randomToken(16), lockedAt: at, expiresAt };
      if (await store.takeOver(db, scope, existing.lock_token, takeOver)) {
        return { kind: 'execute', claim: { scope, handling: 'own-commits', requestHash: hash, lockToken: takeOver.lockToken } };
      }
      throw inFlight(scope.key);
    }
    throw inFlight(scope.key);
  }

  /**
   * `with-work`: runs inside the request's transaction and writes nothing: the answer, written with the
   * work, is the claim. Of two concurrent first requests, the second's answer meets the first's row
   * (on PostgreSQL its insert waits for the first to commit): its transaction rolls back and it
   * replays the first's answer instead (`replayOf`).
   */
  async function claimWithWork(scope: KeyScope, hash: string, now: Date): Promise<Begin> {
    const existing = await store.find(db, scope);
    const claim: Begin = { kind: 'execute', claim: { scope, handling: 'with-work', requestHash: hash, lockToken: undefined } };
    if (!existing) return claim;
    if (existing.expires_at <= now.toISOString()) {
      await store.deleteIfExpired(db, scope, now.toISOString());
      return claim;
    }
    const found = replayOrRefuse(existing, hash, now);
    if (found !== 'stale') return found;
    // Left in flight by an `own-commits` claim whose process died; this request's answer replaces it.
    await store.release(db, scope, existing.lock_token);
    return claim;
  }

  async function storeAnswer(claim: Claim, response: { status: number; body: string }): Promise<boolean> {
    const at = clock.now().toISOString();
    if (claim.handling === 'own-commits') {
      return store.complete(db, claim.scope, claim.lockToken!, { status: response.status, body: secrets.seal(response.body), completedAt: at });
    }
    await store.insert(db, {
      organization_id: claim.scope.organizationId,
      mode: claim.scope.mode,
      key: claim.scope.key,
      request_hash: claim.requestHash,
      lock_token: randomToken(16),
      locked_at: at,
      response_status: response.status,
      response_body: secrets.seal(response.body),
      created_at: at,
      completed_at: at,
      expires_at: new Date(Date.parse(at) + IDEMPOTENCY_RETENTION_MS).toISOString(),
    });
    return true;
  }

  return {
    /** The key from the header value, or undefined when none was sent and none is required. */
    readKey(header: string | string[] | undefined, requirement: IdempotencyRequirement): string | undefined {
      if (header === undefined) {
        if (requirement === 'optional') return undefined;
        throw new AppError('idempotency_key_required', 'This endpoint requires an Idempotency-Key header, so that a retry can never act twice.', {
          param: '/header/idempotency-key',
        });
      }
      const invalid = (why: string) =>
        new AppError('idempotency_key_invalid', `The Idempotency-Key header ${why}; send 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} printable ASCII characters.`, {
          param: '/header/idempotency-key',
        });
      if (Array.isArray(header)) throw invalid('was sent more than once');
      if (header.length === 0) throw invalid('is empty');
      if (header.length > IDEMPOTENCY_KEY_MAX_LENGTH) throw invalid(`is ${header.length} characters long`);
      if (!PRINTABLE_ASCII.test(header)) throw invalid('holds characters that are not printable ASCII');
      return header;
    },

    /**
     * Claims the key for this request, or answers it from the key's first request. An expired row
     * counts as absent. `with-work` must run inside the request's transaction.
     */
    async begin(caller: { organizationId: string; mode: Mode | null }, key: string, request: RequestFingerprint, handling: KeyHandling): Promise<Begin> {
      const now = clock.now();
      // Dashboard and OAuth tokens carry no mode; what they do is live.
      const scope: KeyScope = { organizationId: caller.organizationId, mode: caller.mode ?? 'live', key };
      const hash = requestHash(request);
      return handling === 'with-work' ? claimWithWork(scope, hash, now) : claimInOwnCommit(scope, hash, now);
    },

    /**
     * Stores the response of a claimed request, or lets the key go when the response is not final so
     * that the client's retry runs again. A `with-work` claim's success is stored inside the request's
     * transaction (a unique violation there means a concurrent first request answered first: see
     * `replayOf`); its final error, after that transaction rolled back, in a commit of its own. `lost`:
     * another request answered the key first, so this response is not the one the key answers with.
     */
    async finish(claim: Claim, response: ResponseRecord): Promise<Finish> {
      const final = response.body !== undefined && isFinalResponse(response.status, response.errorCode);
      if (!final) return claim.handling === 'own-commits' && !(await store.release(db, claim.scope, claim.lockToken!)) ? 'lost' : 'released';
      try {
        return (await storeAnswer(claim, { status: response.status, body: response.body! })) ? 'stored' : 'lost';
      } catch (error) {
        // A `with-work` error is stored after its transaction rolled back, so a concurrent first request
        // may have answered meanwhile; a success's violation must reach the caller, whose transaction it ends.
        if (claim.handling === 'with-work' && response.status >= 400 && isUniqueViolation(error)) return 'lost';
        throw error;
      }
    },

    /** The answer the key holds now, for a `with-work` request whose own answer lost the race to store. */
    async replayOf(claim: Claim): Promise<{ status: number; body: string } | undefined> {
      const existing = await store.find(db, claim.scope);
      if (!existing || existing.request_hash !== claim.requestHash || existing.completed_at === null || existing.response_status === null) return undefined;
      return { status: existing.response_status, body: existing.response_body === null ? '' : secrets.open(existing.response_body) };
    },

    /**
     * Deletes the keys past their retention (the `idempotency_key.purge` job, hourly). Expired rows
     * are already ignored on read and replaced on a new claim: this only keeps the table small, off
     * the request path.
     */
    purgeExpired(options: PurgeOptions = {}): Promise<PurgeResult> {
      const now = clock.now().toISOString();
      return purgeInBatches((limit) => store.deleteExpired(db, now, limit), options);
    },
  };
}

export type IdempotencyKeysService = ReturnType<typeof createIdempotencyKeysService>;
