/**
 * The fuzz's own machinery, without a service: what its checks flag, that a seed names its cases,
 * and that a request left unanswered is reported as a hang. A fuzz whose checks cannot fail would
 * pass whatever the server answered.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { answerProblems, type Answer } from './checks.ts';
import { casesFor } from './mutations.ts';
import type { Operation, World } from './operations.ts';
import { runFuzz } from './runner.ts';

const REQUEST_ID = 'req_01M8AK6SPVBP6XFRXRZRWK9TKK';
const RATE_LIMITED = { 'x-ratelimit-limit': '400', 'x-ratelimit-remaining': '399', 'x-ratelimit-reset': '1' };

function operation(path: string, overrides: Partial<Operation> = {}): Operation {
  return {
    key: `POST ${path}`,
    method: 'POST',
    path,
    pathParams: [],
    queryParams: [],
    idempotencyKey: undefined,
    body: undefined,
    credentials: undefined,
    ...overrides,
  };
}

const world: World = { ids: {}, otherIds: {}, named: {}, receiverUrl: 'http://127.0.0.1:9/hooks', now: new Date('2026-06-01T12:00:00Z') };

function envelope(code: string, overrides: Record<string, unknown> = {}): string {
  return JSON.stringify({
    error: {
      type: 'invalid_request_error',
      code,
      message: 'Nope.',
      param: null,
      details: [],
      retryable: false,
      doc_url: `http://localhost:3000/docs/errors/${code}`,
      request_id: REQUEST_ID,
      ...overrides,
    },
  });
}

function answer(status: number, text: string, headers: Record<string, string> = {}): Answer {
  return { status, text, headers: { 'x-request-id': REQUEST_ID, 'content-type': 'application/json; charset=utf-8', ...RATE_LIMITED, ...headers } };
}

describe('the fuzz checks', () => {
  const api = operation('/v1/contacts');

  it('pass an error in the envelope, with its request id and the rate-limit headers', () => {
    assert.deepEqual(answerProblems(api, answer(400, envelope('validation_failed')), true), []);
  });

  it('flag any 5xx, a 503 with Retry-After included', () => {
    const unavailable = answer(503, envelope('service_unavailable', { type: 'api_error', retryable: true }), { 'retry-after': '5' });
    assert.match(answerProblems(api, unavailable, true).join(), /status 503/);
    assert.match(answerProblems(api, answer(500, 'oops', { 'content-type': 'text/plain' }), true).join(), /status 500/);
  });

  it("pass a 502 provider_rejected that carries the provider's own code: the provider refused what was asked", () => {
    const provider = (code: number | null) => ({ code, subcode: null, message: 'Unsupported post request.', trace_id: null });
    const rejected = (code: number | null) => answer(502, envelope('provider_rejected', { type: 'provider_error', provider: provider(code) }));
    assert.deepEqual(answerProblems(api, rejected(100), true), []);
    assert.match(answerProblems(api, rejected(null), true).join(), /status 502/);
  });

  it('flag an error outside the envelope, a code of another status, and a request id that is not the header’s', () => {
    assert.match(answerProblems(api, answer(400, '{"message":"bad"}'), true).join(), /not in the error envelope/);
    assert.match(answerProblems(api, answer(404, envelope('validation_failed')), true).join(), /status 404 is not validation_failed's 400/);
    assert.match(answerProblems(api, answer(400, envelope('validation_failed', { request_id: 'req_other' })), true).join(), /not the X-Request-Id/);
  });

  it('flag missing rate-limit headers where a bucket governs the route, and on an unknown path whatever the route', () => {
    const bare = (status: number, code: string, type: string) => ({
      ...answer(status, envelope(code, { type })),
      headers: { 'x-request-id': REQUEST_ID, 'content-type': 'application/json' },
    });
    assert.match(answerProblems(api, bare(400, 'validation_failed', 'invalid_request_error'), true).join(), /no rate-limit headers/);
    assert.deepEqual(answerProblems(api, bare(400, 'validation_failed', 'invalid_request_error'), false), []);
    assert.match(answerProblems(api, bare(404, 'route_not_found', 'not_found_error'), false).join(), /no rate-limit headers/);
  });

  it("hold the sandbox to its provider's envelopes, and recognise a relayed provider answer by its trace id", () => {
    const graph = operation('/sandbox/graph/{version}/{id}/messages');
    const graphError = JSON.stringify({ error: { message: '(#100) Invalid parameter', type: 'OAuthException', code: 100, fbtrace_id: 'abc' } });
    assert.deepEqual(answerProblems(graph, answer(400, graphError, { 'x-fb-trace-id': 'abc' }), false), []);
    assert.match(answerProblems(graph, answer(400, graphError, { 'x-fb-trace-id': 'xyz' }), false).join(), /fbtrace_id/);
    const runtime = operation('/runtime/{provider_version}/{node}');
    assert.deepEqual(answerProblems(runtime, answer(400, graphError, { 'x-fb-trace-id': 'abc' }), true), []);
    assert.match(answerProblems(runtime, answer(400, '{"error":"?"}'), true).join(), /neither our envelope nor a relayed/);
  });
});

describe('the fuzz cases', () => {
  const contacts = operation('/v1/contacts', {
    body: { contentType: 'application/json', schema: { type: 'object', required: ['name'], properties: { name: { type: 'string', maxLength: 10 } } } },
  });

  it('are the same for the same seed, and others for another', () => {
    const describe = (seed: number) => casesFor(contacts, world, seed, 30).map((fuzzCase) => `${fuzzCase.family} ${fuzzCase.note} ${fuzzCase.path}`);
    assert.deepEqual(describe(42), describe(42));
    assert.notDeepEqual(describe(42), describe(43));
  });

  it('over a few rounds, give a case to every family that has something to change on the operation', () => {
    const families = new Set(casesFor(contacts, world, 1, 60).map((fuzzCase) => fuzzCase.family));
    // No path or query parameters, no Idempotency-Key, no id in the body, not a GET: the rest.
    assert.deepEqual([...families].sort(), [
      'baseline',
      'body.deep',
      'body.duplicate-key',
      'body.edge-values',
      'body.huge-array',
      'body.huge-string',
      'body.lone-surrogate',
      'body.malformed',
      'body.missing-required',
      'body.nul',
      'body.number',
      'body.unknown-field',
      'body.wrong-type',
      'content-type',
      'query.unknown',
    ]);
  });
});

describe('the fuzz runner', () => {
  it('reports a request that gets no answer as a hang, and goes on', async (t) => {
    // A server that reads every request and never answers: the scenario itself.
    const silent = createServer(() => {});
    t.after(() => new Promise<void>((resolve) => (silent.closeAllConnections(), silent.close(() => resolve()))));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const target = {
      url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`,
      credentials: { organization_key: 'x', connection_key: 'x', dashboard_token: 'x' },
      unlimited: new Set<string>(),
    };
    const report = await runFuzz(target, [operation('/silent')], world, { seed: 1, cases: 2, hangMs: 100 });
    assert.equal(report.requests, 2);
    assert.deepEqual(
      report.violations.map((violation) => violation.problems),
      [['no answer within 0.1 s'], ['no answer within 0.1 s']],
    );
  });
});
