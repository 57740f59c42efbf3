/**
 * The fire job's rules: what an occurrence records, the next slot, completion, failures, catch-up,
 * overlap, and the faults (an edit during a fire, a worker killed inside one, a job run twice).
 *
 * Schedules are made and read over HTTP. Their fire jobs run through a worker of the test's own,
 * built on the same store with a target that records what it is asked to create and writes a row in
 * the fire's transaction (standing in for the notifications), so that the rules are tested whatever
 * the notifications module does; schedules.test.ts runs the service's own wiring. The service's own
 * worker is never driven here (no `settle`), so it never takes these jobs.
 */
import assert from 'node:assert/strict';
import { afterEach, before, describe, it } from 'node:test';
import type { Trx } from '../../db/connect.ts';
import { scheduleFire, scheduleFireKey } from '../../jobs/catalog.ts';
import { createQueue, type Queue } from '../../jobs/queue.ts';
import { createWorker } from '../../jobs/worker.ts';
import { DAY, HOUR, ManualClock, MINUTE, SECOND } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { NotificationTarget, NotificationTargets } from '../notifications/notification-target.ts';
import { suiteScope, type TestServer } from '../../../test/harness.ts';
import { createConnection, createKey, type SignedUp, startServerWithOwner, fireJobs } from '../../../test/factories.ts';
import { createSchedulesModule } from './index.ts';

type Json = Record<string, any>;

interface Call {
  scheduleId: string;
  occurrenceId: string;
  sendAt: string;
  target: NotificationTarget;
}

/**
 * A target that answers a notification (a batch for several recipients) and writes an audit row in
 * the fire's transaction for each creation; `refuse` makes it write and then refuse, as a paused
 * template would.
 */
function recordingTarget(server: TestServer) {
  const calls: Call[] = [];
  let refusal: AppError | undefined;
  const targets: NotificationTargets = {
    checkTarget: (_principal, target) => Promise.resolve(target),
    async createForOccurrence(trx: Trx, input) {
      calls.push({ scheduleId: input.scheduleId, occurrenceId: input.occurrenceId, sendAt: input.sendAt.toISOString(), target: input.target });
      await server.app.services.audit.record(
        trx,
        { system: true, organizationId: input.organizationId },
        { action: 'test.target_created', target: { type: 'schedule_occurrence', id: input.occurrenceId }, data: { schedule_id: input.scheduleId } },
      );
      if (refusal) throw refusal;
      return (input.target.to?.length ?? 0) > 1 ? { batch_id: `ntb_${newId('notification').slice(4)}` } : { notification_id: newId('notification') };
    },
  };
  return {
    targets,
    callsFor: (scheduleId: string) => calls.filter((call) => call.scheduleId === scheduleId),
    refuse(error: AppError | undefined) {
      refusal = error;
    },
  };
}

/** The schedules module on the server's store with `targets`, and a worker that runs only its fire jobs. */
function firing(server: TestServer, targets: NotificationTargets, queue: Pick<Queue, 'enqueue' | 'cancel'> = createQueue({ clock: server.clock })) {
  const { db } = server.app.store;
  const module = createSchedulesModule({
    db,
    clock: server.clock,
    queue,
    audit: server.app.services.audit,
    targets,
    runs: server.app.services.runs.scheduleTargets,
  });
  const worker = createWorker({
    db,
    commitWithRequests: server.app.store.commitWithRequests,
    clock: server.clock,
    log: { error() {}, warn() {} },
    catalog: [scheduleFire],
  });
  for (const job of module.jobs ?? []) worker.register(job.definition, job.handler);
  return { service: module.service, runDue: () => worker.drain() };
}

/** The rows the recording target wrote for one schedule, as committed. */
async function targetRows(server: TestServer, scheduleId: string): Promise<string[]> {
  const rows = await server.app.store.db.selectFrom('audit_events').select(['target_id', 'data']).where('action', '=', 'test.target_created').execute();
  return rows.filter((row) => (JSON.parse(row.data) as { schedule_id: string }).schedule_id === scheduleId).map((row) => row.target_id);
}

const iso = (ms: number) => new Date(ms).toISOString();

describe('firing schedules', () => {
  let server: TestServer;
  let owner: SignedUp;
  let line: { id: string };
  let token: string;
  const suite = suiteScope();
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    line = await createConnection(server, owner);
    assert.equal((await server.request('POST', `/v1/connections/${line.id}/sync`, { token: owner.token })).status, 200);
    // A key: a dashboard token would expire as the clock moves on.
    token = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
  });

  // Each test's schedules go with it: their jobs would otherwise come due in the days of the next ones.
  afterEach(async () => {
    const listed = await server.request('GET', '/v1/schedules?limit=100', { token });
    for (const each of listed.body.data as Json[]) await server.request('DELETE', `/v1/schedules/${each.id}`, { token });
  });

  /** Moves the clock to the next midnight (UTC): each test has its own day, after the others'. */
  function newDay(): number {
    const day = Math.ceil((server.clock.now().getTime() + 1) / DAY) * DAY;
    server.clock.set(day);
    return day;
  }

  const target = (extra: Json = {}) => ({
    type: 'notification',
    connection_id: line.id,
    template: { name: 'hello_world', language: 'en_US' },
    to: ['+447700900123'],
    ...extra,
  });
  async function create(body: Json): Promise<Json> {
    const response = await server.request('POST', '/v1/schedules', { token, body: { target: target(), ...body } });
    assert.equal(response.status, 201, response.text);
    return response.body;
  }
  const hourly = (start: number, extra: Json = {}) => create({ recurrence: { type: 'interval', every_seconds: 3600 }, start_at: iso(start), ...extra });
  const read = async (id: string) => (await server.request('GET', `/v1/schedules/${id}`, { token })).body as Json;
  const occurrences = async (id: string) => (await server.request('GET', `/v1/schedules/${id}/occurrences?order=asc&limit=100`, { token })).body.data as Json[];
  const statuses = async (id: string) => (await occurrences(id)).map((each) => [each.scheduled_for, each.status]);

  describe('on time', () => {
    it('the occurrence fires: it records what the target created, and the next slot follows the scheduled time, not the time it ran', async () => {
      const day = newDay();
      const schedule = await hourly(day + HOUR);
      const { targets, callsFor } = recordingTarget(server);
      const { runDue } = firing(server, targets);
      server.clock.set(day + HOUR + 2 * MINUTE);
      assert.equal(await runDue(), 1);

      const [occurrence, ...more] = await occurrences(schedule.id);
      assert.equal(more.length, 0);
      assert.match(occurrence!.id, /^occ_[0-9A-HJKMNP-TV-Z]{26}$/);
      const [call] = callsFor(schedule.id);
      assert.deepEqual(occurrence, {
        id: occurrence!.id,
        object: 'schedule_occurrence',
        schedule_id: schedule.id,
        scheduled_for: iso(day + HOUR),
        scheduled_for_local: iso(day + HOUR).replace('.000Z', '+00:00'),
        status: 'fired',
        reason: null,
        fired_at: iso(day + HOUR + 2 * MINUTE),
        result: { notification_id: occurrence!.result.notification_id },
        error: null,
        created_at: iso(day + HOUR + 2 * MINUTE),
      });
      assert.match(occurrence.result.notification_id, /^ntf_/);
      assert.deepEqual(call, { scheduleId: schedule.id, occurrenceId: occurrence.id, sendAt: iso(day + HOUR + 2 * MINUTE), target: target() });
      assert.deepEqual(await targetRows(server, schedule.id), [occurrence.id]);

      const after = await read(schedule.id);
      assert.equal(after.occurrence_count, 1);
      assert.equal(after.consecutive_failures, 0);
      assert.equal(after.last_occurrence_at, iso(day + HOUR));
      assert.equal(after.next_occurrence_at, iso(day + 2 * HOUR), 'an hour after the scheduled time, not after 2 minutes late');
      assert.equal(after.revision, 1, 'firing is no edit');
      assert.deepEqual(await fireJobs(server, schedule.id), [
        {
          payload: { schedule_id: schedule.id, scheduled_for: iso(day + 2 * HOUR), revision: 1 },
          run_at: iso(day + 2 * HOUR),
          key: scheduleFireKey(schedule.id, iso(day + 2 * HOUR), 1),
        },
      ]);
      assert.equal(await runDue(), 0, 'nothing more is due');
    });

    it('an occurrence for several recipients records the batch the target created', async () => {
      const day = newDay();
      const schedule = await hourly(day + HOUR, { target: target({ to: ['+447700900201', '+447700900202'] }) });
      const { targets } = recordingTarget(server);
      server.clock.set(day + HOUR);
      await firing(server, targets).runDue();
      const [occurrence] = await occurrences(schedule.id);
      assert.deepEqual(Object.keys(occurrence!.result), ['batch_id']);
      assert.match(occurrence!.result.batch_id, /^ntb_/);
    });

    it('once: the schedule completes after its occurrence and queues nothing more', async () => {
      const day = newDay();
      const schedule = await create({ recurrence: { type: 'once', at: iso(day + 3 * HOUR) } });
      const { targets, callsFor } = recordingTarget(server);
      server.clock.set(day + 3 * HOUR);
      await firing(server, targets).runDue();
      assert.deepEqual(await statuses(schedule.id), [[iso(day + 3 * HOUR), 'fired']]);
      const after = await read(schedule.id);
      assert.equal(after.status, 'completed');
      assert.equal(after.next_occurrence_at, null);
      assert.equal(after.occurrence_count, 1);
      assert.deepEqual(await fireJobs(server, schedule.id), []);
      assert.equal(callsFor(schedule.id).length, 1);
    });

    it('max_occurrences: it completes once that many fired or failed', async () => {
      const day = newDay();
      const schedule = await hourly(day + HOUR, { max_occurrences: 2 });
      const { targets, refuse } = recordingTarget(server);
      const { runDue } = firing(server, targets);
      refuse(new AppError('template_not_approved', 'The template is paused.'));
      server.clock.set(day + HOUR);
      await runDue();
      refuse(undefined);
      server.clock.set(day + 2 * HOUR);
      await runDue();
      assert.deepEqual(await statuses(schedule.id), [
        [iso(day + HOUR), 'failed'],
        [iso(day + 2 * HOUR), 'fired'],
      ]);
      assert.equal((await read(schedule.id)).status, 'completed');
      assert.deepEqual(await fireJobs(server, schedule.id), []);
    });

    it('end_at: the last occurrence before it completes the schedule', async () => {
      const day = newDay();
      const schedule = await hourly(day + HOUR, { end_at: iso(day + 2 * HOUR + 30 * MINUTE) });
      const { targets } = recordingTarget(server);
      const { runDue } = firing(server, targets);
      server.clock.set(day + HOUR);
      await runDue();
      assert.equal((await read(schedule.id)).status, 'active');
      server.clock.set(day + 2 * HOUR);
      await runDue();
      const after = await read(schedule.id);
      assert.equal(after.status, 'completed');
      assert.equal(after.next_occurrence_at, null);
      assert.equal(after.occurrence_count, 2);
    });
  });

  describe('failures', () => {
    it('a refusal is a failed occurrence with its error; what the target wrote is undone; the next slot is still queued', async () => {
      const day = newDay();
      const schedule = await hourly(day + HOUR);
      const { targets, callsFor, refuse } = recordingTarget(server);
      refuse(new AppError('template_not_approved', 'Template hello_world (en_US) is paused.'));
      server.clock.set(day + HOUR);
      await firing(server, targets).runDue();
      const [occurrence] = await occurrences(schedule.id);
      assert.equal(occurrence!.status, 'failed');
      assert.deepEqual(occurrence!.error, { code: 'template_not_approved', message: 'Template hello_world (en_US) is paused.' });
      assert.equal(occurrence!.result, null);
      assert.equal(callsFor(schedule.id).length, 1, 'asked once: the failure is recorded without asking again');
      assert.deepEqual(await targetRows(server, schedule.id), [], 'the row the target wrote before refusing was rolled back');
      const after = await read(schedule.id);
      assert.equal(after.consecutive_failures, 1);
      assert.equal(after.occurrence_count, 1);
      assert.equal(after.status, 'active');
      assert.equal(after.next_occurrence_at, iso(day + 2 * HOUR));
      assert.equal((await fireJobs(server, schedule.id)).length, 1);
    });

    it('5 failures in a row pause it with the reason; a success in between starts the count again; resuming clears it', async () => {
      const day = newDay();
      const schedule = await hourly(day + HOUR);
      const { targets, refuse } = recordingTarget(server);
      const { runDue } = firing(server, targets);
      const at = async (hours: number, refusal?: AppError) => {
        refuse(refusal);
        server.clock.set(day + hours * HOUR);
        await runDue();
      };
      const paused = new AppError('template_not_approved', 'The template is paused.');
      for (const hours of [1, 2, 3, 4]) await at(hours, paused);
      assert.equal((await read(schedule.id)).consecutive_failures, 4);
      await at(5);
      assert.equal((await read(schedule.id)).consecutive_failures, 0, 'a success resets the count');
      for (const hours of [6, 7, 8, 9]) await at(hours, paused);
      assert.equal((await read(schedule.id)).status, 'active');
      await at(10, paused);

      const after = await read(schedule.id);
      assert.equal(after.status, 'paused');
      assert.equal(after.consecutive_failures, 5);
      assert.equal(after.paused_reason, '5 occurrences in a row failed; the last: template_not_approved: The template is paused.');
      assert.equal(after.next_occurrence_at, null);
      assert.deepEqual(await fireJobs(server, schedule.id), []);
      await at(12);
      assert.equal((await occurrences(schedule.id)).length, 10, 'nothing fires while paused');

      const resumed = await server.request('PATCH', `/v1/schedules/${schedule.id}`, { token, body: { status: 'active' } });
      assert.equal(resumed.status, 200, resumed.text);
      assert.equal(resumed.body.consecutive_failures, 0);
      assert.equal(resumed.body.paused_reason, null);
      assert.equal(resumed.body.next_occurrence_at, iso(day + 12 * HOUR), 'from now: the hours missed while paused are not caught up');
    });
  });

  describe('late and overlapping', () => {
    it('later than the catch-up window: the latest missed slot is recorded missed, and the schedule goes on from now with no storm', async () => {
      const day = newDay();
      const schedule = await hourly(day + HOUR);
      const { targets, callsFor } = recordingTarget(server);
      const { runDue } = firing(server, targets);
      // The service was down from before 01:00 until 10:30; the window is an hour.
      server.clock.set(day + 10 * HOUR + 30 * MINUTE);
      assert.equal(await runDue(), 1, 'one job ran');
      const list = await occurrences(schedule.id);
      assert.deepEqual(
        list.map((each) => [each.scheduled_for, each.status]),
        [
          [iso(day + 9 * HOUR), 'missed'],
          [iso(day + 10 * HOUR), 'fired'],
        ],
      );
      assert.equal(
        list[0]!.reason,
        `Occurrences from ${iso(day + HOUR)} to this one came due more than catchup_window_seconds (3600 s) before the schedule could fire, at ${iso(day + 10 * HOUR + 30 * MINUTE)}: only this one, the latest, is recorded`,
      );
      assert.equal(list[0]!.fired_at, null);
      assert.equal(callsFor(schedule.id).length, 1, '10:00 is within the window and fires; the nine before do not');
      const after = await read(schedule.id);
      assert.equal(after.next_occurrence_at, iso(day + 11 * HOUR));
      assert.equal(after.occurrence_count, 1, 'missed occurrences do not count');
      assert.equal(after.last_occurrence_at, iso(day + 10 * HOUR));
      assert.equal(await runDue(), 0);
    });

    it('a once schedule that could not fire within its window is missed, and completes', async () => {
      const day = newDay();
      const schedule = await create({ recurrence: { type: 'once', at: iso(day + HOUR) }, catchup_window_seconds: 600 });
      const { targets, callsFor } = recordingTarget(server);
      server.clock.set(day + HOUR + 11 * MINUTE);
      await firing(server, targets).runDue();
      assert.deepEqual(await statuses(schedule.id), [[iso(day + HOUR), 'missed']]);
      assert.match((await occurrences(schedule.id))[0]!.reason, /^It came due more than catchup_window_seconds \(600 s\) before the schedule could fire/);
      assert.equal((await read(schedule.id)).status, 'completed');
      assert.equal(callsFor(schedule.id).length, 0);
    });

    it('behind within the window, overlap_policy skip: the latest due fires; the ones before are one skipped record', async () => {
      const day = newDay();
      const schedule = await create({ recurrence: { type: 'interval', every_seconds: 600 }, start_at: iso(day + 10 * MINUTE) });
      const { targets, callsFor } = recordingTarget(server);
      const { runDue } = firing(server, targets);
      server.clock.set(day + 45 * MINUTE);
      assert.equal(await runDue(), 1);
      const list = await occurrences(schedule.id);
      assert.deepEqual(
        list.map((each) => [each.scheduled_for, each.status]),
        [
          [iso(day + 30 * MINUTE), 'skipped'],
          [iso(day + 40 * MINUTE), 'fired'],
        ],
      );
      assert.equal(
        list[0]!.reason,
        `Due at once with later occurrences when the schedule fired late, at ${iso(day + 45 * MINUTE)}; with overlap_policy skip only the latest, ${iso(day + 40 * MINUTE)}, fired. 3 occurrences from ${iso(day + 10 * MINUTE)} were skipped: only this one, the latest, is recorded`,
      );
      assert.equal(callsFor(schedule.id).length, 1);
      assert.equal((await read(schedule.id)).next_occurrence_at, iso(day + 50 * MINUTE));
      assert.equal(await runDue(), 0);
    });

    it('behind within the window, overlap_policy allow: each due occurrence fires in turn, then it is back on its times', async () => {
      const day = newDay();
      const schedule = await create({ recurrence: { type: 'interval', every_seconds: 600 }, start_at: iso(day + 10 * MINUTE), overlap_policy: 'allow' });
      const { targets, callsFor } = recordingTarget(server);
      const { runDue } = firing(server, targets);
      server.clock.set(day + 45 * MINUTE);
      assert.equal(await runDue(), 4, 'each fire queued the next, already due');
      assert.deepEqual(
        await statuses(schedule.id),
        [10, 20, 30, 40].map((minutes) => [iso(day + minutes * MINUTE), 'fired']),
      );
      assert.equal(callsFor(schedule.id).length, 4);
      assert.equal((await read(schedule.id)).next_occurrence_at, iso(day + 50 * MINUTE));
      assert.deepEqual(
        (await fireJobs(server, schedule.id)).map((job) => job.run_at),
        [iso(day + 50 * MINUTE)],
      );
    });
  });

  describe('faults', () => {
    it('a schedule edited while its fire job is running: that job, of the old revision, does nothing; the new revision fires the slot once', async () => {
      const day = newDay();
      const schedule = await hourly(day + HOUR);
      const { targets, callsFor } = recordingTarget(server);
      const { service, runDue } = firing(server, targets);
      server.clock.set(day + HOUR);
      // A worker claims the job (as `claim` marks it) ...
      const [job] = await fireJobs(server, schedule.id);
      await server.app.store.db
        .updateTable('jobs')
        .set({ status: 'running', locked_by: 'wrk_elsewhere', locked_until: iso(day + HOUR + MINUTE), attempts: 1 })
        .where('dedupe_key', '=', job!.key)
        .execute();
      // ... and the schedule is edited before its transaction reads the schedule.
      const edited = await server.request('PATCH', `/v1/schedules/${schedule.id}`, { token, body: { target: target({ to: ['+447700900999'] }) } });
      assert.equal(edited.status, 200, edited.text);
      assert.equal(edited.body.revision, 2);
      assert.equal(edited.body.next_occurrence_at, iso(day + HOUR), 'the slot due now is still to fire');
      // The running attempt goes on, and finds the revision changed.
      await service.fire(job!.payload);
      assert.deepEqual(await occurrences(schedule.id), []);
      assert.equal(callsFor(schedule.id).length, 0);
      await server.app.store.db.updateTable('jobs').set({ status: 'succeeded', locked_by: null }).where('dedupe_key', '=', job!.key).execute();

      assert.equal(await runDue(), 1, "the new revision's job");
      assert.deepEqual(await statuses(schedule.id), [[iso(day + HOUR), 'fired']]);
      assert.deepEqual(
        callsFor(schedule.id).map((call) => call.target.to),
        [['+447700900999']],
        'the edited target',
      );
      assert.deepEqual(
        (await fireJobs(server, schedule.id)).map((each) => each.payload),
        [{ schedule_id: schedule.id, scheduled_for: iso(day + 2 * HOUR), revision: 2 }],
      );
    });

    it('an edit just after a fire committed replaces the job that fire queued', async () => {
      const day = newDay();
      const schedule = await hourly(day + HOUR);
      const { targets } = recordingTarget(server);
      server.clock.set(day + HOUR);
      await firing(server, targets).runDue();
      const edited = await server.request('PATCH', `/v1/schedules/${schedule.id}`, { token, body: { recurrence: { type: 'interval', every_seconds: 1800 } } });
      assert.equal(edited.status, 200, edited.text);
      assert.deepEqual(
        (await fireJobs(server, schedule.id)).map((each) => each.payload),
        [{ schedule_id: schedule.id, scheduled_for: iso(day + HOUR + 30 * MINUTE), revision: 2 }],
        'one job: the one the fire queued was cancelled',
      );
    });

    it("a worker killed between creating the occurrence's notifications and queueing the next occurrence leaves nothing; the job's next run does it all once", async () => {
      const day = newDay();
      const schedule = await hourly(day + HOUR);
      const { targets, callsFor } = recordingTarget(server);
      const real = createQueue({ clock: server.clock });
      let killed = true;
      // The enqueue of the next slot is the last write of the fire: a crash there is a crash after all the others.
      const crashing: Pick<Queue, 'enqueue' | 'cancel'> = {
        enqueue: (trx, definition, payload, options) => {
          if (killed && definition.name === scheduleFire.name) return Promise.reject(new Error('worker killed'));
          return real.enqueue(trx, definition, payload, options);
        },
        cancel: (trx, key) => real.cancel(trx, key),
      };
      const { runDue } = firing(server, targets, crashing);
      server.clock.set(day + HOUR);
      assert.equal(await runDue(), 1);

      assert.equal(callsFor(schedule.id).length, 1, 'the notifications were created in the transaction ...');
      assert.deepEqual(await targetRows(server, schedule.id), [], '... which was rolled back whole');
      assert.deepEqual(await occurrences(schedule.id), []);
      const unchanged = await read(schedule.id);
      assert.equal(unchanged.occurrence_count, 0);
      assert.equal(unchanged.next_occurrence_at, iso(day + HOUR));
      const [retry, ...others] = await fireJobs(server, schedule.id);
      assert.equal(others.length, 0);
      assert.deepEqual(retry!.payload, { schedule_id: schedule.id, scheduled_for: iso(day + HOUR), revision: 1 }, 'the same job waits for its retry');
      assert.ok(retry!.run_at > iso(day + HOUR));

      killed = false;
      server.clock.set(day + HOUR + MINUTE);
      assert.equal(await runDue(), 1);
      const [occurrence, ...more] = await occurrences(schedule.id);
      assert.equal(more.length, 0);
      assert.equal(occurrence!.status, 'fired');
      assert.deepEqual(await targetRows(server, schedule.id), [occurrence!.id], 'created once, by the run that committed');
      assert.deepEqual(
        (await fireJobs(server, schedule.id)).map((each) => each.payload.scheduled_for),
        [iso(day + 2 * HOUR)],
      );
    });

    it('the fire job run twice for one payload (its worker died after the commit) makes one occurrence, one target creation, one next job', async () => {
      const day = newDay();
      const schedule = await hourly(day + HOUR);
      const { targets, callsFor } = recordingTarget(server);
      const { service, runDue } = firing(server, targets);
      const [job] = await fireJobs(server, schedule.id);
      server.clock.set(day + HOUR);
      await runDue();
      server.clock.set(day + HOUR + 2 * SECOND);
      await service.fire(job!.payload);
      assert.equal((await occurrences(schedule.id)).length, 1);
      assert.equal(callsFor(schedule.id).length, 1);
      assert.equal((await targetRows(server, schedule.id)).length, 1);
      assert.equal((await fireJobs(server, schedule.id)).length, 1);
      assert.equal((await read(schedule.id)).occurrence_count, 1);
    });

    it('the job of a schedule paused or deleted since does nothing if it runs', async () => {
      const day = newDay();
      const pausedOne = await hourly(day + HOUR);
      const deletedOne = await hourly(day + HOUR);
      const { targets, callsFor } = recordingTarget(server);
      const { service } = firing(server, targets);
      const [pausedJob] = await fireJobs(server, pausedOne.id);
      const [deletedJob] = await fireJobs(server, deletedOne.id);
      assert.equal((await server.request('PATCH', `/v1/schedules/${pausedOne.id}`, { token, body: { status: 'paused' } })).status, 200);
      assert.equal((await server.request('DELETE', `/v1/schedules/${deletedOne.id}`, { token })).status, 200);
      server.clock.set(day + HOUR);
      await service.fire(pausedJob!.payload);
      await service.fire(deletedJob!.payload);
      assert.equal(callsFor(pausedOne.id).length + callsFor(deletedOne.id).length, 0);
      assert.deepEqual(await occurrences(pausedOne.id), []);
      assert.equal((await read(pausedOne.id)).next_occurrence_at, null);
    });
  });
});

describe('firing schedules across DST in Europe/Berlin', () => {
  let server: TestServer;
  let token: string;
  let line: { id: string };
  const suite = suiteScope();
  before(async () => {
    let owner: SignedUp;
    ({ server, owner } = await startServerWithOwner(suite, { clock: new ManualClock('2026-03-28T12:00:00.000Z') }));
    line = await createConnection(server, owner);
    assert.equal((await server.request('POST', `/v1/connections/${line.id}/sync`, { token: owner.token })).status, 200);
    token = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
  });

  async function nightly(startAt?: string): Promise<Json> {
    const response = await server.request('POST', '/v1/schedules', {
      token,
      body: {
        timezone: 'Europe/Berlin',
        recurrence: { type: 'cron', expression: '30 2 * * *' },
        target: { type: 'notification', connection_id: line.id, template: { name: 'hello_world', language: 'en_US' }, to: ['+447700900123'] },
        ...(startAt ? { start_at: startAt } : {}),
      },
    });
    assert.equal(response.status, 201, response.text);
    return response.body;
  }

  it('the 02:30 of the spring-forward day fires at 03:00 and the occurrence says so; the next is at 02:30 again', async () => {
    const schedule = await nightly();
    assert.equal(schedule.next_occurrence_at, '2026-03-29T01:00:00.000Z');
    const { targets } = recordingTarget(server);
    server.clock.set('2026-03-29T01:00:00.000Z');
    await firing(server, targets).runDue();
    const list = (await server.request('GET', `/v1/schedules/${schedule.id}/occurrences`, { token })).body.data as Json[];
    assert.deepEqual(
      list.map((each) => [each.scheduled_for, each.scheduled_for_local, each.status, each.reason]),
      [
        [
          '2026-03-29T01:00:00.000Z',
          '2026-03-29T03:00:00+02:00',
          'fired',
          '02:30 does not exist on 2026-03-29 in Europe/Berlin (the clocks go from 02:00 to 03:00); ran at 03:00',
        ],
      ],
    );
    assert.equal((await server.request('GET', `/v1/schedules/${schedule.id}`, { token })).body.next_occurrence_at, '2026-03-30T00:30:00.000Z');
  });

  it('the 02:30 of the fall-back day, which happens twice, fires once', async () => {
    server.clock.set('2026-10-24T12:00:00.000Z');
    const schedule = await nightly();
    const { targets, callsFor } = recordingTarget(server);
    const { runDue } = firing(server, targets);
    server.clock.set('2026-10-25T00:30:00.000Z');
    await runDue();
    // An hour later the wall clock reads 02:30 again.
    server.clock.set('2026-10-25T01:30:00.000Z');
    await runDue();
    const list = (await server.request('GET', `/v1/schedules/${schedule.id}/occurrences`, { token })).body.data as Json[];
    assert.deepEqual(
      list.map((each) => [each.scheduled_for_local, each.status]),
      [['2026-10-25T02:30:00+02:00', 'fired']],
    );
    assert.equal(callsFor(schedule.id).length, 1);
    assert.equal((await server.request('GET', `/v1/schedules/${schedule.id}`, { token })).body.next_occurrence_at, '2026-10-26T01:30:00.000Z');
  });
});
