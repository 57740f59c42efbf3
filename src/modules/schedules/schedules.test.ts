/**
 * /v1/schedules over HTTP: creating, reading, changing, pausing and deleting schedules, their
 * occurrences and upcoming ones, the rules on bad input, the limit, who may see what, and the fire
 * job the service itself runs. The firing rules in detail (catch-up, overlap, completion, crashes)
 * are in schedule-fire.test.ts, with a target of the test's own.
 *
 * Every schedule here names a real connection and its approved `hello_world` template, so that the
 * tests hold once the notifications module checks targets for real.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { DAY, HOUR, ManualClock, MINUTE } from '../../lib/clock.ts';
import { startServer, suiteScope, type TestServer } from '../../../test/harness.ts';
import { addMember, assertError, createConnection, createKey, settle, signUp, type SignedUp, startServerWithOwner, fireJobs } from '../../../test/factories.ts';

type Json = Record<string, any>;
interface Line {
  id: string;
  phone_number_id: string;
}

const CUSTOMER = '+447700900123';

/** A sandbox number with its account's templates synced: `hello_world` is approved on every new one. */
async function lineWithTemplates(server: TestServer, owner: { token: string }, options: { test?: boolean } = {}): Promise<Line> {
  const connection = await createConnection(server, owner, options);
  const sync = await server.request('POST', `/v1/connections/${connection.id}/sync`, { token: owner.token });
  assert.equal(sync.status, 200, sync.text);
  return connection;
}

const targetOn = (line: Line, extra: Json = {}) => ({
  type: 'notification',
  connection_id: line.id,
  template: { name: 'hello_world', language: 'en_US' },
  to: [CUSTOMER],
  ...extra,
});

async function auditActions(server: TestServer, token: string, targetId: string): Promise<string[]> {
  const response = await server.request('GET', `/v1/events?target_id=${targetId}&order=asc`, { token });
  assert.equal(response.status, 200, response.text);
  return response.body.data.map((event: { action: string }) => event.action);
}

describe('schedules', () => {
  let server: TestServer;
  let owner: SignedUp;
  let line: Line;
  const suite = suiteScope();
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    line = await lineWithTemplates(server, owner);
  });

  const create = (body: Json, token = owner.token) => server.request('POST', '/v1/schedules', { token, body: { target: targetOn(line), ...body } });
  async function created(body: Json, token = owner.token): Promise<Json> {
    const response = await create(body, token);
    assert.equal(response.status, 201, response.text);
    return response.body;
  }
  const daily = (extra: Json = {}) => created({ recurrence: { type: 'cron', expression: '0 9 * * *' }, ...extra });
  const patch = (id: string, body: Json, token = owner.token) => server.request('PATCH', `/v1/schedules/${id}`, { token, body });
  const get = (id: string, token = owner.token) => server.request('GET', `/v1/schedules/${id}`, { token });
  const occurrences = (id: string, query = '', token = owner.token) => server.request('GET', `/v1/schedules/${id}/occurrences${query}`, { token });

  describe('create, read, list', () => {
    it('a cron schedule answers 201 with its fields, next occurrence and description, queues one fire job, and is audited', async () => {
      const response = await create({
        name: 'Morning reminder',
        timezone: 'Europe/Berlin',
        recurrence: { type: 'cron', expression: '0 9 * * 1-5' },
        end_at: '2026-12-31T00:00:00Z',
        max_occurrences: 100,
        overlap_policy: 'allow',
        catchup_window_seconds: 600,
        metadata: { campaign: 'spring' },
      });
      assert.equal(response.status, 201, response.text);
      const schedule = response.body;
      assert.match(schedule.id, /^sch_[0-9A-HJKMNP-TV-Z]{26}$/);
      assert.deepEqual(
        { ...schedule, id: undefined },
        {
          id: undefined,
          object: 'schedule',
          name: 'Morning reminder',
          status: 'active',
          paused_reason: null,
          timezone: 'Europe/Berlin',
          recurrence: { type: 'cron', expression: '0 9 * * 1-5' },
          start_at: '2026-06-01T12:00:00.000Z',
          end_at: '2026-12-31T00:00:00.000Z',
          max_occurrences: 100,
          overlap_policy: 'allow',
          catchup_window_seconds: 600,
          target: targetOn(line),
          // 2026-06-01 is a Monday; 09:00 in Berlin (CEST) has passed: Tuesday's.
          next_occurrence_at: '2026-06-02T07:00:00.000Z',
          last_occurrence_at: null,
          occurrence_count: 0,
          consecutive_failures: 0,
          description: 'At 09:00, Monday through Friday (Europe/Berlin)',
          metadata: { campaign: 'spring' },
          revision: 1,
          created_at: '2026-06-01T12:00:00.000Z',
          updated_at: '2026-06-01T12:00:00.000Z',
        },
      );
      assert.deepEqual(await fireJobs(server, schedule.id), [
        {
          payload: { schedule_id: schedule.id, scheduled_for: '2026-06-02T07:00:00.000Z', revision: 1 },
          run_at: '2026-06-02T07:00:00.000Z',
          key: `${schedule.id}:2026-06-02T07:00:00.000Z:1`,
        },
      ]);
      assert.deepEqual(await auditActions(server, owner.token, schedule.id), ['schedule.created']);
    });

    it('what is not sent has its default: UTC, active, skip, a 3600 s window, start_at now, no end and no limit', async () => {
      const schedule = await daily();
      assert.equal(schedule.name, null);
      assert.equal(schedule.timezone, 'UTC');
      assert.equal(schedule.status, 'active');
      assert.equal(schedule.overlap_policy, 'skip');
      assert.equal(schedule.catchup_window_seconds, 3600);
      assert.equal(schedule.start_at, '2026-06-01T12:00:00.000Z');
      assert.equal(schedule.end_at, null);
      assert.equal(schedule.max_occurrences, null);
      assert.deepEqual(schedule.metadata, {});
      assert.equal(schedule.next_occurrence_at, '2026-06-02T09:00:00.000Z');
      assert.equal(schedule.description, 'At 09:00 (UTC)');
    });

    it('once: the next occurrence is its time, described in its time zone', async () => {
      const schedule = await created({ timezone: 'America/Sao_Paulo', recurrence: { type: 'once', at: '2026-06-10T09:30:00-03:00' } });
      assert.deepEqual(schedule.recurrence, { type: 'once', at: '2026-06-10T12:30:00.000Z' }, 'stored in UTC');
      assert.equal(schedule.next_occurrence_at, '2026-06-10T12:30:00.000Z');
      assert.equal(schedule.description, 'Once, on 2026-06-10 at 09:30 (America/Sao_Paulo)');
    });

    it('interval: the first occurrence is start_at (default now), then every every_seconds from it', async () => {
      const now = await created({ recurrence: { type: 'interval', every_seconds: 7200 } });
      assert.equal(now.next_occurrence_at, '2026-06-01T12:00:00.000Z', 'the first fires right away');
      assert.equal(now.description, 'Every 2 hours');
      const later = await created({ recurrence: { type: 'interval', every_seconds: 7200 }, start_at: '2026-06-01T15:30:00Z' });
      assert.equal(later.next_occurrence_at, '2026-06-01T15:30:00.000Z');
      const anchoredInThePast = await created({ recurrence: { type: 'interval', every_seconds: 7200 }, start_at: '2026-06-01T07:30:00Z' });
      assert.equal(anchoredInThePast.next_occurrence_at, '2026-06-01T13:30:00.000Z', 'counted from start_at: 07:30, 09:30, 11:30, 13:30');
    });

    it('created paused, it has no next occurrence and queues nothing', async () => {
      const schedule = await daily({ status: 'paused' });
      assert.equal(schedule.status, 'paused');
      assert.equal(schedule.next_occurrence_at, null);
      assert.deepEqual(await fireJobs(server, schedule.id), []);
    });

    it('a repeated create with the same Idempotency-Key creates one schedule and one fire job', async () => {
      const body = { recurrence: { type: 'cron', expression: '15 10 * * *' }, target: targetOn(line) };
      const headers = { 'idempotency-key': 'schedule-create-once' };
      const first = await server.request('POST', '/v1/schedules', { token: owner.token, body, headers });
      const second = await server.request('POST', '/v1/schedules', { token: owner.token, body, headers });
      assert.equal(first.status, 201, first.text);
      assert.deepEqual(second.body, first.body);
      assert.equal((await fireJobs(server, first.body.id)).length, 1);
    });

    it('the time zone is kept in its canonical letter case', async () => {
      assert.equal((await daily({ timezone: 'europe/berlin' })).timezone, 'Europe/Berlin');
    });

    it('get answers the schedule as created; list pages newest first and filters by status', async () => {
      const other = await signUp(server);
      const otherLine = await lineWithTemplates(server, other);
      const made: Json[] = [];
      for (const status of ['active', 'paused', 'active']) {
        const response = await create({ recurrence: { type: 'cron', expression: '0 9 * * *' }, status, target: targetOn(otherLine) }, other.token);
        assert.equal(response.status, 201, response.text);
        made.push(response.body);
      }
      const read = await get(made[0]!.id, other.token);
      assert.equal(read.status, 200, read.text);
      assert.deepEqual(read.body, made[0]!);
      const ids = (response: { body: Json }) => response.body.data.map((each: Json) => each.id);
      const all = await server.request('GET', '/v1/schedules', { token: other.token });
      assert.deepEqual(ids(all), [made[2]!.id, made[1]!.id, made[0]!.id]);
      assert.deepEqual(ids(await server.request('GET', '/v1/schedules?status=paused', { token: other.token })), [made[1]!.id]);
      assert.deepEqual(ids(await server.request('GET', '/v1/schedules?status=active&order=asc', { token: other.token })), [made[0]!.id, made[2]!.id]);
      const page = await server.request('GET', '/v1/schedules?limit=2', { token: other.token });
      assert.deepEqual(ids(page), [made[2]!.id, made[1]!.id]);
      assert.equal(page.body.has_more, true);
      assert.deepEqual(ids(await server.request('GET', `/v1/schedules?limit=2&after=${page.body.next_cursor}`, { token: other.token })), [made[0]!.id]);
      assertError(await server.request('GET', '/v1/schedules?status=done', { token: other.token }), 400, 'validation_failed');
    });
  });

  describe('preview', () => {
    const preview = (body: Json, token = owner.token) => server.request('POST', '/v1/schedules/preview', { token, body });

    it('describes the recurrence and lists its next occurrences exactly as the schedule made from it will have them, storing nothing', async () => {
      const body = { timezone: 'europe/berlin', recurrence: { type: 'cron', expression: '0 9 * * 1-5' }, end_at: '2026-12-31T00:00:00Z' };
      const shown = await preview({ ...body, count: 3 });
      assert.equal(shown.status, 200, shown.text);
      assert.deepEqual(shown.body, {
        object: 'schedule_preview',
        timezone: 'Europe/Berlin',
        description: 'At 09:00, Monday through Friday (Europe/Berlin)',
        occurrences: [
          { scheduled_for: '2026-06-02T07:00:00.000Z', scheduled_for_local: '2026-06-02T09:00:00+02:00', reason: null },
          { scheduled_for: '2026-06-03T07:00:00.000Z', scheduled_for_local: '2026-06-03T09:00:00+02:00', reason: null },
          { scheduled_for: '2026-06-04T07:00:00.000Z', scheduled_for_local: '2026-06-04T09:00:00+02:00', reason: null },
        ],
      });
      const before = (await server.request('GET', '/v1/schedules?limit=100', { token: owner.token })).body.data.length;
      const schedule = await created(body);
      assert.equal(schedule.next_occurrence_at, shown.body.occurrences[0]!.scheduled_for);
      assert.equal(schedule.description, shown.body.description);
      const upcoming = (await occurrences(schedule.id, '?include=upcoming&limit=3&order=asc')).body.data.map((o: Json) => o.scheduled_for);
      assert.deepEqual(
        upcoming,
        shown.body.occurrences.map((o: Json) => o.scheduled_for),
      );
      assert.equal((await server.request('GET', '/v1/schedules?limit=100', { token: owner.token })).body.data.length, before + 1, 'only the create stored one');
    });

    it('stops at max_occurrences and at a once; defaults to five', async () => {
      const interval = await preview({ recurrence: { type: 'interval', every_seconds: 3600 } });
      assert.equal(interval.body.occurrences.length, 5);
      const capped = await preview({ recurrence: { type: 'interval', every_seconds: 3600 }, max_occurrences: 2, count: 10 });
      assert.equal(capped.body.occurrences.length, 2);
      const once = await preview({ recurrence: { type: 'once', at: '2026-06-03T10:00:00Z' } });
      assert.deepEqual(
        once.body.occurrences.map((o: Json) => o.scheduled_for),
        ['2026-06-03T10:00:00.000Z'],
      );
    });

    it('refuses what creating would refuse, on the same field; a viewer may preview, an agent may not', async () => {
      for (const [body, param] of [
        [{ recurrence: { type: 'cron', expression: '* * * * *' } }, '/recurrence/expression'],
        [{ recurrence: { type: 'cron', expression: '0 9 * * *' }, timezone: 'Mars/Olympus_Mons' }, '/timezone'],
        [{ recurrence: { type: 'once', at: '2026-05-01T00:00:00Z' } }, '/recurrence/at'],
        [{ recurrence: { type: 'cron', expression: '0 9 * * *' }, count: 21 }, '/count'],
        [{ recurrence: { type: 'cron', expression: '0 9 * * *' }, target: targetOn(line) }, '/target'],
      ] as const) {
        const error = assertError(await preview(body), 400, 'validation_failed');
        assert.equal(error.param, param, JSON.stringify(error));
      }
      const viewer = await addMember(server, owner.organizationId, 'viewer');
      assert.equal((await preview({ recurrence: { type: 'cron', expression: '0 9 * * *' } }, viewer.token)).status, 200);
      const agent = await addMember(server, owner.organizationId, 'agent');
      assertError(await preview({ recurrence: { type: 'cron', expression: '0 9 * * *' } }, agent.token), 403, 'scope_missing');
    });
  });

  describe('bad input', () => {
    const cron = (expression: string) => ({ recurrence: { type: 'cron', expression } });
    async function refused(body: Json, param: string, message?: RegExp) {
      const error = assertError(await create(body), 400, 'validation_failed');
      assert.equal(error.param, param, JSON.stringify(error));
      if (message) assert.match(error.message, message);
      return error;
    }

    it('an invalid time zone is refused on /timezone', async () => {
      for (const timezone of ['Mars/Olympus_Mons', 'Europe/Berlinn', '+01:00', 'CEST+1']) {
        await refused({ ...cron('0 9 * * *'), timezone }, '/timezone', /IANA time zone/);
      }
    });

    it('a cron firing every minute is refused on /recurrence/expression', async () => {
      await refused(cron('* * * * *'), '/recurrence/expression', /60 s apart .* at least 5 minutes apart/);
      await refused(cron('*/2 9 * * *'), '/recurrence/expression', /at least 5 minutes apart/);
      await refused(cron('0,1 9 * * *'), '/recurrence/expression', /at least 5 minutes apart/);
    });

    it('a cron of other than five fields, or that croner cannot read, is refused on /recurrence/expression', async () => {
      await refused(cron('0 0 9 * * *'), '/recurrence/expression', /5 fields/);
      await refused(cron('@daily at 9'), '/recurrence/expression', /5 fields/);
      await refused(cron('0 25 * * *'), '/recurrence/expression', /not a valid cron expression/);
      await refused(cron('0 0 30 2 *'), '/recurrence/expression', /never matches/);
    });

    it('an interval under 300 s is refused on /recurrence/every_seconds', async () => {
      await refused({ recurrence: { type: 'interval', every_seconds: 299 } }, '/recurrence/every_seconds');
      await refused({ recurrence: { type: 'interval', every_seconds: 600.5 } }, '/recurrence/every_seconds');
    });

    it('once in the past is refused on /recurrence/at', async () => {
      await refused({ recurrence: { type: 'once', at: '2026-06-01T11:59:00Z' } }, '/recurrence/at', /past/);
      await refused({ recurrence: { type: 'once', at: 'tomorrow' } }, '/recurrence/at');
    });

    it('a once outside start_at and end_at, or a recurrence with no occurrence before end_at, is refused', async () => {
      await refused(
        { recurrence: { type: 'once', at: '2026-06-10T00:00:00Z' }, start_at: '2026-06-11T00:00:00Z' },
        '/recurrence/at',
        /between start_at and end_at/,
      );
      await refused({ ...cron('0 9 1 1 *'), end_at: '2026-12-31T00:00:00Z' }, '/end_at', /no occurrence/);
    });

    it('end_at not after start_at is refused on /end_at', async () => {
      await refused({ ...cron('0 9 * * *'), start_at: '2026-07-01T00:00:00Z', end_at: '2026-07-01T00:00:00Z' }, '/end_at', /after start_at/);
    });

    it('the catch-up window is 60 to 86400 seconds; max_occurrences at least 1', async () => {
      await refused({ ...cron('0 9 * * *'), catchup_window_seconds: 86_401 }, '/catchup_window_seconds');
      await refused({ ...cron('0 9 * * *'), catchup_window_seconds: 59 }, '/catchup_window_seconds');
      await refused({ ...cron('0 9 * * *'), max_occurrences: 0 }, '/max_occurrences');
    });

    it('an unknown recurrence type or field, a missing recurrence or target is validation_failed', async () => {
      await refused({ recurrence: { type: 'weekly', day: 'monday' } }, '/recurrence/type');
      await refused({ recurrence: { type: 'cron', expression: '0 9 * * *', seconds: 0 } }, '/recurrence/seconds');
      await refused({ ...cron('0 9 * * *'), colour: 'blue' }, '/colour');
      assertError(await server.request('POST', '/v1/schedules', { token: owner.token, body: { target: targetOn(line) } }), 400, 'validation_failed');
      assertError(await server.request('POST', '/v1/schedules', { token: owner.token, body: cron('0 9 * * *') }), 400, 'validation_failed');
    });

    it('more than 1,000 recipients, none, or a number not in E.164 is refused in the target', async () => {
      const many = Array.from({ length: 1001 }, (_, i) => `+4477009${String(i).padStart(5, '0')}`);
      await refused({ ...cron('0 9 * * *'), target: targetOn(line, { to: many }) }, '/target/to');
      await refused({ ...cron('0 9 * * *'), target: targetOn(line, { to: [] }) }, '/target/to');
      await refused({ ...cron('0 9 * * *'), target: targetOn(line, { to: ['07700 900123'] }) }, '/target/to/0');
    });

    it('a target checked as a send: its parameters, its contacts and its template are refused on their own fields', async () => {
      const mismatch = assertError(
        await create({ ...cron('0 9 * * *'), target: targetOn(line, { parameters: { body: ['Ana'] } }) }),
        400,
        'template_parameters_mismatch',
      );
      assert.equal(mismatch.param, '/target/parameters/body/0');
      const unknown = await create({ ...cron('0 9 * * *'), target: targetOn(line, { to: undefined, contact_ids: ['ct_01M8A8FF6RY3JAECD7JYZNYMV5'] }) });
      assert.equal(assertError(unknown, 404, 'resource_not_found').param, '/target/contact_ids/0');
      const missing = assertError(
        await create({ ...cron('0 9 * * *'), target: targetOn(line, { template: { name: 'no_such', language: 'en_US' } }) }),
        404,
        'resource_not_found',
      );
      assert.equal(missing.param, '/target/template/name');
    });

    it('an automation target naming no automation of the organization is not found, and nothing is created', async () => {
      const before = (await server.request('GET', '/v1/schedules?limit=100', { token: owner.token })).body.data.length;
      const error = assertError(
        await create({ ...cron('0 9 * * *'), target: { type: 'automation', automation_id: 'aut_01JZ8Q6W3M4T2V9X0B7C5D1E2F', input: { plan: 'gold' } } }),
        404,
        'resource_not_found',
      );
      assert.equal(error.param, '/target/automation_id');
      assert.equal((await server.request('GET', '/v1/schedules?limit=100', { token: owner.token })).body.data.length, before);
    });

    it('a malformed automation target is still validation_failed on its field', async () => {
      await refused({ ...cron('0 9 * * *'), target: { type: 'automation', automation_id: 'nope', input: {} } }, '/target/automation_id');
    });

    it('PATCH refuses status completed, and the same rules as create', async () => {
      const schedule = await daily();
      const check = async (body: Json, param: string) => assert.equal(assertError(await patch(schedule.id, body), 400, 'validation_failed').param, param);
      await check({ status: 'completed' }, '/status');
      await check({ timezone: 'Nowhere/Special' }, '/timezone');
      await check({ recurrence: { type: 'cron', expression: '* * * * *' } }, '/recurrence/expression');
      await check({ end_at: '2026-05-01T00:00:00Z' }, '/end_at');
      await check({ start_at: '2027-01-01T00:00:00Z', end_at: '2026-12-01T00:00:00Z' }, '/end_at');
      assert.equal(
        assertError(
          await patch(schedule.id, { target: { type: 'automation', automation_id: 'aut_01JZ8Q6W3M4T2V9X0B7C5D1E2F', input: {} } }),
          404,
          'resource_not_found',
        ).param,
        '/target/automation_id',
      );
      assert.equal((await get(schedule.id)).body.revision, 1, 'nothing was written');
    });

    it('a malformed id is validation_failed on /path/id; an unknown one is resource_not_found', async () => {
      assert.equal(assertError(await get('sch_nope'), 400, 'validation_failed').param, '/path/id');
      assertError(await get('sch_01JZ8Q6W3M4T2V9X0B7C5D1E2F'), 404, 'resource_not_found');
      assertError(await occurrences('sch_01JZ8Q6W3M4T2V9X0B7C5D1E2F'), 404, 'resource_not_found');
    });
  });

  describe('update', () => {
    it('a change adds one to the revision and replaces the queued fire job by the recomputed one', async () => {
      const schedule = await daily();
      const response = await patch(schedule.id, { recurrence: { type: 'cron', expression: '30 17 * * *' }, timezone: 'Europe/Berlin' });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.revision, 2);
      assert.equal(response.body.next_occurrence_at, '2026-06-01T15:30:00.000Z');
      assert.equal(response.body.description, 'At 17:30 (Europe/Berlin)');
      assert.deepEqual(await fireJobs(server, schedule.id), [
        {
          payload: { schedule_id: schedule.id, scheduled_for: '2026-06-01T15:30:00.000Z', revision: 2 },
          run_at: '2026-06-01T15:30:00.000Z',
          key: `${schedule.id}:2026-06-01T15:30:00.000Z:2`,
        },
      ]);
      assert.deepEqual(await auditActions(server, owner.token, schedule.id), ['schedule.created', 'schedule.updated']);
      assert.deepEqual((await get(schedule.id)).body, response.body);
    });

    it('a change of name alone queues the same slot again, under the new revision', async () => {
      const schedule = await daily();
      const response = await patch(schedule.id, { name: 'Renamed' });
      assert.equal(response.body.revision, 2);
      assert.equal(response.body.next_occurrence_at, schedule.next_occurrence_at);
      assert.deepEqual(
        (await fireJobs(server, schedule.id)).map((job) => job.payload),
        [{ schedule_id: schedule.id, scheduled_for: schedule.next_occurrence_at, revision: 2 }],
      );
    });

    it('a request that changes nothing writes nothing: same revision, same job', async () => {
      const schedule = await daily({ name: 'Same', metadata: { a: 1 } });
      const response = await patch(schedule.id, { name: 'Same', recurrence: { type: 'cron', expression: '0 9 * * *' }, metadata: { a: 1 }, status: 'active' });
      assert.deepEqual(response.body, schedule);
      assert.deepEqual(
        (await fireJobs(server, schedule.id)).map((job) => job.payload.revision),
        [1],
      );
      assert.deepEqual(await auditActions(server, owner.token, schedule.id), ['schedule.created']);
    });

    it('metadata merges; a key set to null is removed; name, end_at and max_occurrences clear with null', async () => {
      const schedule = await daily({ name: 'N', metadata: { keep: 1, drop: 2 }, end_at: '2027-01-01T00:00:00Z', max_occurrences: 3 });
      const response = await patch(schedule.id, { metadata: { drop: null, add: 'x' }, name: null, end_at: null, max_occurrences: null });
      assert.deepEqual(response.body.metadata, { keep: 1, add: 'x' });
      assert.equal(response.body.name, null);
      assert.equal(response.body.end_at, null);
      assert.equal(response.body.max_occurrences, null);
    });

    it('pause: paused, no next occurrence and no queued job, audited as schedule.paused', async () => {
      const schedule = await daily();
      const response = await patch(schedule.id, { status: 'paused' });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.status, 'paused');
      assert.equal(response.body.paused_reason, null, 'a request gives no reason');
      assert.equal(response.body.next_occurrence_at, null);
      assert.equal(response.body.revision, 2);
      assert.deepEqual(await fireJobs(server, schedule.id), []);
      assert.deepEqual(await auditActions(server, owner.token, schedule.id), ['schedule.created', 'schedule.paused']);
    });

    it('a paused schedule may still be edited; resuming goes on from now, audited as schedule.resumed', async () => {
      const schedule = await created({ recurrence: { type: 'interval', every_seconds: 3600 }, start_at: '2026-06-01T12:30:00Z' });
      await patch(schedule.id, { status: 'paused' });
      const edited = await patch(schedule.id, { name: 'While paused' });
      assert.equal(edited.body.next_occurrence_at, null);
      assert.deepEqual(await fireJobs(server, schedule.id), []);
      const resumed = await patch(schedule.id, { status: 'active' });
      assert.equal(resumed.body.status, 'active');
      assert.equal(resumed.body.next_occurrence_at, '2026-06-01T12:30:00.000Z');
      assert.equal(resumed.body.revision, 4);
      assert.deepEqual(
        (await fireJobs(server, schedule.id)).map((job) => job.payload),
        [{ schedule_id: schedule.id, scheduled_for: '2026-06-01T12:30:00.000Z', revision: 4 }],
      );
      assert.deepEqual(await auditActions(server, owner.token, schedule.id), ['schedule.created', 'schedule.paused', 'schedule.updated', 'schedule.resumed']);
    });

    it('end_at moved before the next occurrence completes the schedule; a completed one cannot be paused, nor resumed with nothing left', async () => {
      const schedule = await daily();
      const response = await patch(schedule.id, { end_at: '2026-06-02T00:00:00Z' });
      assert.equal(response.body.status, 'completed');
      assert.equal(response.body.next_occurrence_at, null);
      assert.deepEqual(await fireJobs(server, schedule.id), []);
      assert.equal(assertError(await patch(schedule.id, { status: 'paused' }), 409, 'invalid_state').param, '/status');
      assertError(await patch(schedule.id, { status: 'active' }), 409, 'invalid_state');
      const reopened = await patch(schedule.id, { end_at: '2026-06-10T00:00:00Z', status: 'active' });
      assert.equal(reopened.status, 200, reopened.text);
      assert.equal(reopened.body.status, 'active');
      assert.equal(reopened.body.next_occurrence_at, '2026-06-02T09:00:00.000Z');
    });

    it('a change that leaves a completed schedule an occurrence keeps it completed until it is resumed', async () => {
      const schedule = await daily({ max_occurrences: 1 });
      const completed = await patch(schedule.id, { max_occurrences: 1, end_at: '2026-06-02T00:00:00Z' });
      assert.equal(completed.body.status, 'completed');
      const extended = await patch(schedule.id, { end_at: null });
      assert.equal(extended.body.status, 'completed');
      assert.equal(extended.body.next_occurrence_at, null);
    });

    it('an unknown or deleted schedule is resource_not_found', async () => {
      assertError(await patch('sch_01JZ8Q6W3M4T2V9X0B7C5D1E2F', { name: 'x' }), 404, 'resource_not_found');
    });
  });

  describe('delete', () => {
    it('answers {id, object, deleted}; then every read and write is 404, the fire job is gone, and it is audited', async () => {
      const schedule = await daily();
      const response = await server.request('DELETE', `/v1/schedules/${schedule.id}`, { token: owner.token });
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.body, { id: schedule.id, object: 'schedule', deleted: true });
      assertError(await get(schedule.id), 404, 'resource_not_found');
      assertError(await patch(schedule.id, { name: 'x' }), 404, 'resource_not_found');
      assertError(await occurrences(schedule.id), 404, 'resource_not_found');
      assertError(await server.request('DELETE', `/v1/schedules/${schedule.id}`, { token: owner.token }), 404, 'resource_not_found');
      assert.deepEqual(await fireJobs(server, schedule.id), []);
      const listed = await server.request('GET', '/v1/schedules?limit=100', { token: owner.token });
      assert.ok(!listed.body.data.some((each: Json) => each.id === schedule.id));
      assert.deepEqual(await auditActions(server, owner.token, schedule.id), ['schedule.created', 'schedule.deleted']);
    });
  });

  describe('occurrences and upcoming ones', () => {
    it('a new schedule has no occurrences; include=upcoming lists the next ones, computed and not stored, newest first', async () => {
      const schedule = await daily({ timezone: 'Europe/Berlin' });
      const none = await occurrences(schedule.id);
      assert.equal(none.status, 200, none.text);
      assert.deepEqual(none.body, { object: 'list', data: [], has_more: false, next_cursor: null });
      const response = await occurrences(schedule.id, '?include=upcoming&limit=3');
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.body.data, [
        ...['2026-06-04', '2026-06-03', '2026-06-02'].map((day) => ({
          id: null,
          object: 'schedule_occurrence',
          schedule_id: schedule.id,
          scheduled_for: `${day}T07:00:00.000Z`,
          scheduled_for_local: `${day}T09:00:00+02:00`,
          status: 'pending',
          reason: null,
          fired_at: null,
          result: null,
          error: null,
          created_at: null,
        })),
      ]);
    });

    it('asc puts them last; limit bounds them (25 by default, at most 100); max_occurrences bounds them too', async () => {
      const schedule = await daily();
      const asc = await occurrences(schedule.id, '?include=upcoming&order=asc&limit=2');
      assert.deepEqual(
        asc.body.data.map((each: Json) => each.scheduled_for),
        ['2026-06-02T09:00:00.000Z', '2026-06-03T09:00:00.000Z'],
      );
      assert.equal((await occurrences(schedule.id, '?include=upcoming')).body.data.length, 25);
      assert.equal((await occurrences(schedule.id, '?include=upcoming&limit=100')).body.data.length, 100);
      const bounded = await daily({ max_occurrences: 2 });
      assert.equal((await occurrences(bounded.id, '?include=upcoming')).body.data.length, 2);
      const ending = await daily({ end_at: '2026-06-04T00:00:00Z' });
      assert.equal((await occurrences(ending.id, '?include=upcoming')).body.data.length, 2);
    });

    it('a paused schedule has none upcoming', async () => {
      const schedule = await daily({ status: 'paused' });
      assert.deepEqual((await occurrences(schedule.id, '?include=upcoming')).body.data, []);
    });

    it('include takes only upcoming; a limit over 100 is refused', async () => {
      const schedule = await daily();
      assert.equal(assertError(await occurrences(schedule.id, '?include=past'), 400, 'validation_failed').param, '/query/include');
      assert.equal(assertError(await occurrences(schedule.id, '?limit=101'), 400, 'validation_failed').param, '/query/limit');
    });
  });

  describe('who may', () => {
    it('a viewer may read schedules and their occurrences, and change nothing', async () => {
      const schedule = await daily();
      const viewer = await addMember(server, owner.organizationId, 'viewer');
      assert.equal((await get(schedule.id, viewer.token)).status, 200);
      assert.equal((await occurrences(schedule.id, '', viewer.token)).status, 200);
      assert.equal((await server.request('GET', '/v1/schedules', { token: viewer.token })).status, 200);
      assertError(await create({ recurrence: { type: 'cron', expression: '0 9 * * *' } }, viewer.token), 403, 'scope_missing');
      assertError(await patch(schedule.id, { name: 'x' }, viewer.token), 403, 'scope_missing');
      assertError(await server.request('DELETE', `/v1/schedules/${schedule.id}`, { token: viewer.token }), 403, 'scope_missing');
    });

    it('schedules share the notifications scopes: a key without them is scope_missing', async () => {
      const schedule = await daily();
      const reader = await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: ['notifications:read'] });
      const other = await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: ['messages:read', 'messages:write'] });
      assert.equal((await get(schedule.id, reader.key)).status, 200);
      assert.equal(assertError(await patch(schedule.id, { name: 'x' }, reader.key), 403, 'scope_missing').required_scope, 'notifications:write');
      assert.equal(assertError(await get(schedule.id, other.key), 403, 'scope_missing').required_scope, 'notifications:read');
      const writer = await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: ['notifications:write'] });
      assert.equal((await create({ recurrence: { type: 'cron', expression: '0 9 * * *' } }, writer.key)).status, 201);
    });

    it('a connection key sees only the schedules that send from its own number', async () => {
      const second = await lineWithTemplates(server, owner);
      const mine = await daily();
      const theirs = await created({ recurrence: { type: 'cron', expression: '0 9 * * *' }, target: targetOn(second) });
      const key = (await createKey(server, owner.token, { kind: 'connection', mode: 'live', connection_id: line.id })).key;
      assert.equal((await get(mine.id, key)).status, 200);
      assertError(await get(theirs.id, key), 404, 'resource_not_found');
      assertError(await patch(theirs.id, { name: 'x' }, key), 404, 'resource_not_found');
      assertError(await occurrences(theirs.id, '', key), 404, 'resource_not_found');
      const listed = (await server.request('GET', '/v1/schedules?limit=100', { token: key })).body.data as Json[];
      assert.ok(listed.some((each) => each.id === mine.id));
      assert.ok(listed.every((each) => each.target.connection_id === line.id));
    });

    it('a test key sees only the schedules of test connections', async () => {
      const testLine = await lineWithTemplates(server, owner, { test: true });
      const live = await daily();
      const test = await created({ recurrence: { type: 'cron', expression: '0 9 * * *' }, target: targetOn(testLine) });
      const key = (await createKey(server, owner.token, { kind: 'organization', mode: 'test' })).key;
      assert.equal((await get(test.id, key)).status, 200);
      assertError(await get(live.id, key), 404, 'resource_not_found');
      const listed = (await server.request('GET', '/v1/schedules?limit=100', { token: key })).body.data as Json[];
      assert.deepEqual(
        listed.map((each) => each.id),
        [test.id],
      );
    });
  });

  describe('across organizations', () => {
    it("another organization's schedule is 404 everywhere and absent from its list", async () => {
      const schedule = await daily();
      const stranger = await signUp(server, { organizationName: 'Elsewhere' });
      assertError(await get(schedule.id, stranger.token), 404, 'resource_not_found');
      assertError(await patch(schedule.id, { status: 'paused' }, stranger.token), 404, 'resource_not_found');
      assertError(await occurrences(schedule.id, '?include=upcoming', stranger.token), 404, 'resource_not_found');
      assertError(await server.request('DELETE', `/v1/schedules/${schedule.id}`, { token: stranger.token }), 404, 'resource_not_found');
      assert.deepEqual((await server.request('GET', '/v1/schedules', { token: stranger.token })).body.data, []);
      assert.equal((await get(schedule.id)).body.status, 'active', 'untouched');
    });
  });
});

describe('schedules: at most 500 active per organization', () => {
  let server: TestServer;
  let owner: SignedUp;
  let line: Line;
  const suite = suiteScope();
  before(async () => {
    // 500 creates in a row are more than a dashboard token's burst.
    ({ server, owner } = await startServerWithOwner(suite, { env: { RATE_LIMIT_CREDENTIAL_MULTIPLIER: '10' } }));
    line = await lineWithTemplates(server, owner);
  });

  const create = (status = 'active') =>
    server.request('POST', '/v1/schedules', {
      token: owner.token,
      body: { recurrence: { type: 'cron', expression: '0 9 * * *' }, status, target: targetOn(line) },
    });

  it('the 501st active one is resource_limit_reached; a paused one may be created, and resumed once another is paused', async () => {
    const made: string[] = [];
    for (let i = 0; i < 500; i++) {
      const response = await create();
      assert.equal(response.status, 201, response.text);
      made.push(response.body.id);
    }
    const error = assertError(await create(), 409, 'resource_limit_reached');
    assert.match(error.message, /500 active schedules/);
    const paused = await create('paused');
    assert.equal(paused.status, 201, paused.text);
    assertError(
      await server.request('PATCH', `/v1/schedules/${paused.body.id}`, { token: owner.token, body: { status: 'active' } }),
      409,
      'resource_limit_reached',
    );
    assert.equal((await server.request('PATCH', `/v1/schedules/${made[0]}`, { token: owner.token, body: { status: 'paused' } })).status, 200);
    const resumed = await server.request('PATCH', `/v1/schedules/${paused.body.id}`, { token: owner.token, body: { status: 'active' } });
    assert.equal(resumed.status, 200, resumed.text);
    assertError(await create(), 409, 'resource_limit_reached');
    assert.equal((await server.request('DELETE', `/v1/schedules/${made[1]}`, { token: owner.token })).status, 200);
    assert.equal((await create()).status, 201, 'a deleted one no longer counts');
    const other = await signUp(server);
    const otherLine = await lineWithTemplates(server, other);
    const elsewhere = await server.request('POST', '/v1/schedules', {
      token: other.token,
      body: { recurrence: { type: 'cron', expression: '0 9 * * *' }, target: targetOn(otherLine) },
    });
    assert.equal(elsewhere.status, 201, 'the limit is per organization');
  });
});

describe('schedules: time zones with DST, read from the upcoming occurrences', () => {
  let server: TestServer;
  let owner: SignedUp;
  let line: Line;
  const suite = suiteScope();
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite, { clock: new ManualClock('2026-03-27T12:00:00.000Z') }));
    line = await lineWithTemplates(server, owner);
  });

  async function upcoming(timezone: string, expression: string, limit: number, startAt?: string): Promise<Json[]> {
    const response = await server.request('POST', '/v1/schedules', {
      token: owner.token,
      body: { timezone, recurrence: { type: 'cron', expression }, target: targetOn(line), ...(startAt ? { start_at: startAt } : {}) },
    });
    assert.equal(response.status, 201, response.text);
    const list = await server.request('GET', `/v1/schedules/${response.body.id}/occurrences?include=upcoming&order=asc&limit=${limit}`, { token: owner.token });
    return list.body.data;
  }

  it('Europe/Berlin: 02:30 on the spring-forward day is upcoming at 03:00, and says why', async () => {
    const [first, second, third] = await upcoming('Europe/Berlin', '30 2 * * *', 3);
    assert.deepEqual(
      [first, second, third].map((each) => [each!.scheduled_for_local, each!.reason]),
      [
        ['2026-03-28T02:30:00+01:00', null],
        ['2026-03-29T03:00:00+02:00', '02:30 does not exist on 2026-03-29 in Europe/Berlin (the clocks go from 02:00 to 03:00); ran at 03:00'],
        ['2026-03-30T02:30:00+02:00', null],
      ],
    );
  });

  it('Europe/Berlin: 02:30 on the fall-back day, which happens twice, comes once', async () => {
    const slots = await upcoming('Europe/Berlin', '30 2 * * *', 3, '2026-10-24T00:00:00Z');
    assert.deepEqual(
      slots.map((each) => each.scheduled_for_local),
      ['2026-10-24T02:30:00+02:00', '2026-10-25T02:30:00+02:00', '2026-10-26T02:30:00+01:00'],
    );
  });

  it('America/Sao_Paulo keeps -03:00 across the dates it used to change (no DST since 2019): no shift, no note', async () => {
    const november = await upcoming('America/Sao_Paulo', '30 0 * * *', 3, '2026-10-31T12:00:00Z');
    assert.deepEqual(
      november.map((each) => [each.scheduled_for_local, each.reason]),
      [
        ['2026-11-01T00:30:00-03:00', null],
        ['2026-11-02T00:30:00-03:00', null],
        ['2026-11-03T00:30:00-03:00', null],
      ],
    );
    const february = await upcoming('America/Sao_Paulo', '30 23 * * *', 2, '2027-02-20T12:00:00Z');
    assert.deepEqual(
      february.map((each) => each.scheduled_for),
      ['2027-02-21T02:30:00.000Z', '2027-02-22T02:30:00.000Z'],
      'the third Sunday of February, when summer time used to end, is an ordinary day',
    );
  });
});

describe('schedules: the fire job the service runs', () => {
  let server: TestServer;
  let owner: SignedUp;
  let line: Line;
  // A key, not the owner's dashboard token, which would expire as the clock moves on.
  let token: string;
  const suite = suiteScope();
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    line = await lineWithTemplates(server, owner);
    token = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
  });

  /** Moves the clock to `iso` and runs everything due. */
  async function runTo(iso: string): Promise<void> {
    server.clock.set(iso);
    await settle(server);
  }

  it('a target that cannot be sent fails its occurrences; 5 in a row pause the schedule, with the reason, and queue nothing more', async () => {
    // A line of its own whose template is paused once the schedule exists: no occurrence can be sent.
    const paused = await lineWithTemplates(server, owner);
    const response = await server.request('POST', '/v1/schedules', {
      token,
      body: { recurrence: { type: 'interval', every_seconds: 3600 }, start_at: '2026-06-01T13:00:00Z', target: targetOn(paused) },
    });
    assert.equal(response.status, 201, response.text);
    const schedule = response.body;
    const templates = await server.request('GET', `/v1/templates?connection_id=${paused.id}`, { token });
    const hello = templates.body.data.find((each: Json) => each.name === 'hello_world');
    const review = await server.request('POST', '/sandbox/control/template-status', { body: { template_id: hello.provider_template_id, status: 'PAUSED' } });
    assert.equal(review.status, 200, review.text);
    await settle(server);

    for (const hour of ['13', '14', '15', '16']) {
      await runTo(`2026-06-01T${hour}:00:00.000Z`);
    }
    let read = (await server.request('GET', `/v1/schedules/${schedule.id}`, { token })).body;
    assert.equal(read.status, 'active');
    assert.equal(read.consecutive_failures, 4);
    assert.equal(read.occurrence_count, 4);
    assert.equal(read.next_occurrence_at, '2026-06-01T17:00:00.000Z', 'each next slot follows the last, one hour on');

    await runTo('2026-06-01T17:00:00.000Z');
    read = (await server.request('GET', `/v1/schedules/${schedule.id}`, { token })).body;
    assert.equal(read.status, 'paused');
    assert.equal(read.consecutive_failures, 5);
    assert.equal(read.next_occurrence_at, null);
    assert.match(read.paused_reason, /^5 occurrences in a row failed; the last: \w+: /);
    assert.deepEqual(await fireJobs(server, schedule.id), []);
    const list = (await server.request('GET', `/v1/schedules/${schedule.id}/occurrences`, { token })).body.data as Json[];
    assert.deepEqual(
      list.map((each) => [each.scheduled_for, each.status]),
      ['17', '16', '15', '14', '13'].map((hour) => [`2026-06-01T${hour}:00:00.000Z`, 'failed']),
    );
    for (const each of list) {
      assert.match(each.id, /^occ_/);
      assert.equal(each.result, null);
      assert.equal(each.error.code, 'template_not_approved');
    }
    // The audit log is for dashboard tokens; the owner's first one has expired as the clock moved.
    const login = await server.request('POST', '/auth/login', { body: { email: owner.email, password: owner.password } });
    const audit = await server.request('GET', `/v1/events?target_id=${schedule.id}&order=asc`, { token: login.body.token });
    assert.deepEqual(
      audit.body.data.map((event: Json) => [event.action, event.actor.type]),
      [
        ['schedule.created', 'api_key'],
        ['schedule.paused', 'system'],
      ],
    );

    await runTo('2026-06-01T20:00:00.000Z');
    assert.equal((await server.request('GET', `/v1/schedules/${schedule.id}/occurrences`, { token })).body.data.length, 5, 'nothing fires while paused');
  });

  it('an occurrence creates a notification that carries schedule_id and occurrence_id', async () => {
    const response = await server.request('POST', '/v1/schedules', {
      token,
      body: { recurrence: { type: 'once', at: '2026-06-02T09:00:00Z' }, target: targetOn(line) },
    });
    assert.equal(response.status, 201, response.text);
    const schedule = response.body;
    await runTo('2026-06-02T09:00:00.000Z');
    const [occurrence] = (await server.request('GET', `/v1/schedules/${schedule.id}/occurrences`, { token })).body.data as Json[];
    assert.equal(occurrence!.status, 'fired', JSON.stringify(occurrence));
    const notification = await server.request('GET', `/v1/notifications/${occurrence!.result.notification_id}`, { token });
    assert.equal(notification.status, 200, notification.text);
    assert.equal(notification.body.schedule_id, schedule.id);
    assert.equal(notification.body.occurrence_id, occurrence!.id);
    assert.equal(notification.body.to, CUSTOMER);
    assert.equal((await server.request('GET', `/v1/schedules/${schedule.id}`, { token })).body.status, 'completed');
  });

  it('an occurrence for several recipients creates one batch of notifications', async () => {
    const recipients = ['+447700900201', '+447700900202', '+447700900203'];
    const response = await server.request('POST', '/v1/schedules', {
      token,
      body: { recurrence: { type: 'once', at: '2026-06-03T09:00:00Z' }, target: targetOn(line, { to: recipients }) },
    });
    assert.equal(response.status, 201, response.text);
    await runTo('2026-06-03T09:00:00.000Z');
    const [occurrence] = (await server.request('GET', `/v1/schedules/${response.body.id}/occurrences`, { token })).body.data as Json[];
    assert.equal(occurrence!.status, 'fired', JSON.stringify(occurrence));
    const listed = await server.request('GET', `/v1/notifications?batch_id=${occurrence!.result.batch_id}&limit=100`, { token });
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.body.data.map((each: Json) => each.to).sort(), recipients);
    assert.ok(listed.body.data.every((each: Json) => each.schedule_id === response.body.id && each.occurrence_id === occurrence!.id));
  });

  it('a fire job run again after its commit creates no second notification', async () => {
    const response = await server.request('POST', '/v1/schedules', {
      token,
      body: { recurrence: { type: 'once', at: '2026-06-04T09:00:00Z' }, target: targetOn(line) },
    });
    assert.equal(response.status, 201, response.text);
    const [job] = await fireJobs(server, response.body.id);
    await runTo('2026-06-04T09:00:00.000Z');
    // The worker died after the commit, before recording the job done: the job runs again.
    await server.app.services.schedules.fire(job!.payload);
    const listed = await server.request('GET', `/v1/notifications?schedule_id=${response.body.id}`, { token });
    assert.equal(listed.status, 200, listed.text);
    assert.equal(listed.body.data.length, 1);
    assert.equal((await server.request('GET', `/v1/schedules/${response.body.id}/occurrences`, { token })).body.data.length, 1);
  });
});

describe('schedules: a clock far from the slots', () => {
  it('hours of downtime in a real process are caught up through the job itself: the outage is one missed record', async (t) => {
    const server = await startServer(t, { clock: new ManualClock('2026-06-01T12:00:00.000Z') });
    const owner = await signUp(server);
    const line = await lineWithTemplates(server, owner);
    const token = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
    const response = await server.request('POST', '/v1/schedules', {
      token,
      body: { recurrence: { type: 'cron', expression: '0 */2 * * *' }, target: targetOn(line) },
    });
    assert.equal(response.status, 201, response.text);
    server.clock.advance(DAY + 5 * HOUR + 30 * MINUTE);
    await settle(server);
    const list = (await server.request('GET', `/v1/schedules/${response.body.id}/occurrences`, { token })).body.data as Json[];
    assert.deepEqual(
      list.map((each) => [each.scheduled_for, each.status]),
      [['2026-06-02T16:00:00.000Z', 'missed']],
    );
    assert.equal((await server.request('GET', `/v1/schedules/${response.body.id}`, { token })).body.next_occurrence_at, '2026-06-02T18:00:00.000Z');
  });
});
