import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ProviderCallOutcome } from '../lib/metrics.ts';
import { withCallMetrics, withRelayMetrics } from './call-metrics.ts';
import { ProviderError, type Provider, type ProviderCredentials } from './provider.ts';
import { answerOf, type GraphRelay, type RelayRequest } from './whatsapp/relay.ts';

const credentials: ProviderCredentials = { accessToken: 'token', phoneNumberId: 'pn_1', wabaId: 'waba_1' };

function recorder() {
  const calls: { operation: string; outcome: ProviderCallOutcome; seconds: number }[] = [];
  return { calls, providerCall: (operation: string, outcome: ProviderCallOutcome, seconds: number) => void calls.push({ operation, outcome, seconds }) };
}

/** A provider with a private field, so that a call reaching it with the wrong `this` would throw. */
class FakeProvider {
  readonly #failures: Error[];
  closed = false;

  constructor(failures: Error[]) {
    this.#failures = failures;
  }

  async sendMessage() {
    const failure = this.#failures.shift();
    if (failure) throw failure;
    return { providerMessageId: 'wamid.1', recipientWaId: '15551234567' };
  }

  async close() {
    this.closed = true;
  }
}

describe('provider calls reported to the metrics', () => {
  it('each call is reported by its operation, ok or the category of its error, with its duration', async () => {
    const metrics = recorder();
    const fake = new FakeProvider([new ProviderError({ category: 'throttled', retryable: true, message: 'slow down' }), new Error('a bug')]);
    const provider = withCallMetrics(fake as unknown as Provider & { close(): Promise<void> }, metrics);
    const send = () => provider.sendMessage(credentials, { to: '15551234567', type: 'text', text: 'hi' });
    await assert.rejects(send(), ProviderError);
    await assert.rejects(send(), /a bug/);
    assert.equal((await send()).providerMessageId, 'wamid.1');
    assert.deepEqual(
      metrics.calls.map(({ operation, outcome }) => [operation, outcome]),
      [
        ['sendMessage', 'throttled'],
        ['sendMessage', 'error'],
        ['sendMessage', 'ok'],
      ],
    );
    assert.ok(metrics.calls.every(({ seconds }) => seconds >= 0 && seconds < 5));
    // Not a port method: passed through, bound to the provider, and not reported.
    await provider.close();
    assert.equal(fake.closed, true);
    assert.equal(metrics.calls.length, 3);
  });

  it('a relayed call is the operation `runtime`: ok below 400, else its error envelope’s category, or error without one', async () => {
    const metrics = recorder();
    const envelope = (code: number) => Buffer.from(JSON.stringify({ error: { message: 'no', type: 'OAuthException', code } }));
    const answers = [
      () => answerOf(200, {}, Buffer.from('{}')),
      () => answerOf(401, {}, envelope(190)),
      () => answerOf(502, {}, Buffer.from('<html>bad gateway</html>')),
      () => {
        throw new ProviderError({ category: 'timeout', retryable: true, message: 'no answer' });
      },
    ];
    const relay: GraphRelay = { relay: async () => answers.shift()!(), close: async () => undefined };
    const timed = withRelayMetrics(relay, metrics);
    const request = {} as RelayRequest;
    for (let i = 0; i < 3; i++) await timed.relay(request);
    await assert.rejects(timed.relay(request), ProviderError);
    assert.deepEqual(
      metrics.calls.map(({ operation, outcome }) => [operation, outcome]),
      [
        ['runtime', 'ok'],
        ['runtime', 'auth'],
        ['runtime', 'error'],
        ['runtime', 'timeout'],
      ],
    );
  });
});
