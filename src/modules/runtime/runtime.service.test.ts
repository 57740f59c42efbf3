import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppError } from '../../lib/errors.ts';
import { PacingQueueFullError, type Pacer } from '../../provider/pacing.ts';
import { ProviderError } from '../../provider/provider.ts';
import type { RelayAnswer, RelayRequest } from '../../provider/whatsapp/relay.ts';
import type { Principal } from '../credentials/principal.ts';
import { createRuntimeService } from './runtime.service.ts';
import { rejectionOf } from '../../../test/rejection.ts';

/**
 * The service's rules with its neighbours stubbed: pacing and the recording of provider errors, which
 * the end-to-end tests (runtime.test.ts) cannot observe from outside.
 */

const principal: Principal = {
  kind: 'connection_key',
  credentialId: 'key_1',
  organizationId: 'org_1',
  memberId: null,
  role: null,
  mode: 'live',
  connectionId: 'conn_1',
  scopes: new Set(['runtime:proxy']),
};

function setUp(options: { answer?: Partial<RelayAnswer>; acquire?: Pacer['acquire']; report?: () => Promise<void> } = {}) {
  const paced: [string, number][] = [];
  const reported: ProviderError[] = [];
  const warnings: string[] = [];
  const relayed: RelayRequest[] = [];
  const service = createRuntimeService({
    connections: {
      providerAccess: async () => ({
        connectionId: 'conn_1',
        organizationId: 'org_1',
        test: false,
        throughputPerSecond: 20,
        credentials: { accessToken: 'EAAtoken', phoneNumberId: '111', wabaId: '222' },
      }),
      reportProviderError: async (_id, error) => {
        reported.push(error);
        await options.report?.();
      },
    },
    relay: {
      relay: async (request) => {
        relayed.push(request);
        return { status: 200, headers: {}, body: Buffer.from('{}'), failure: undefined, ...options.answer };
      },
    },
    pacer: {
      acquire:
        options.acquire ??
        (async (key, perSecond) => {
          paced.push([key, perSecond]);
        }),
    },
    log: { warn: (_details, message) => warnings.push(message) },
  });
  const send = (method: 'GET' | 'POST' | 'DELETE', target: string) => service.relay(principal, { ...service.check(target, {}), method, headers: {} });
  return { service, send, paced, reported, warnings, relayed };
}

describe('runtime rules', () => {
  it("paces a send (POST /{phone_number_id}/messages) by the number at the connection's ceiling", async () => {
    const { send, paced } = setUp();
    await send('POST', 'v24.0/111/messages');
    assert.deepEqual(paced, [['111', 20]]);
  });

  it('does not pace reads, uploads or account calls', async () => {
    const { send, paced } = setUp();
    await send('GET', 'v24.0/111');
    await send('POST', 'v24.0/111/media');
    await send('POST', 'v24.0/222/message_templates');
    assert.deepEqual(paced, []);
  });

  it('a send whose slot is too far away is provider_throttled with a Retry-After, and is not relayed', async () => {
    const { send, relayed } = setUp({
      acquire: async (key) => {
        throw new PacingQueueFullError(key, 12_300, 10_000);
      },
    });
    const error = await rejectionOf(send('POST', 'v24.0/111/messages'));
    assert.ok(error instanceof AppError && error.code === 'provider_throttled', String(error));
    assert.equal(error.headers['retry-after'], '3');
    assert.equal(relayed.length, 0);
  });

  it("records the provider's error for the connection, and still answers with it", async () => {
    const failure = new ProviderError({ category: 'auth', retryable: false, message: 'expired', code: 190 });
    const { send, reported } = setUp({ answer: { status: 401, failure } });
    const answer = await send('GET', 'v24.0/111');
    assert.equal(answer.status, 401);
    assert.deepEqual(reported, [failure]);
  });

  it('a failure to record it is logged, not turned into the answer', async () => {
    const failure = new ProviderError({ category: 'auth', retryable: false, message: 'expired', code: 190 });
    const { send, warnings } = setUp({
      answer: { status: 401, failure },
      report: async () => {
        throw new Error('store down');
      },
    });
    assert.equal((await send('GET', 'v24.0/111')).status, 401);
    assert.equal(warnings.length, 1);
  });

  it("relays with the connection's token", async () => {
    const { send, relayed } = setUp();
    await send('DELETE', 'v24.0/222/subscribed_apps');
    assert.equal(relayed[0]?.accessToken, 'EAAtoken');
    assert.equal(relayed[0]?.method, 'DELETE');
  });
});
