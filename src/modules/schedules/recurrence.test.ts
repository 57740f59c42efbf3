/**
 * The recurrence rules on their own, with no server: next slots, DST gaps and overlaps, the catch-up
 * look-back, spacing, time zones and descriptions. The times are fixed, never the machine's clock.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppError } from '../../lib/errors.ts';
import {
  checkRecurrence,
  describeRecurrence,
  gapNote,
  lastSlotBefore,
  localIso,
  offsetMinutes,
  resolveTimeZone,
  slotAfter,
  slotsAfter,
  type Timing,
} from './recurrence.ts';
import type { ScheduleRecurrence } from './schedules.schemas.ts';

const at = (iso: string) => new Date(iso);
const isos = (dates: Date[]) => dates.map((date) => date.toISOString());

function timing(recurrence: ScheduleRecurrence, timeZone = 'UTC', startAt = '2020-01-01T00:00:00.000Z', endAt: string | null = null): Timing {
  return { recurrence, timeZone, startAt: at(startAt), endAt: endAt === null ? null : at(endAt) };
}
const cron = (expression: string, timeZone = 'UTC', startAt?: string, endAt?: string | null) =>
  timing({ type: 'cron', expression }, timeZone, startAt, endAt ?? null);

/** Asserts `fn` throws a validation error on `param` whose message matches `message`. */
function assertRefused(fn: () => void, param: string, message: RegExp): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof AppError, String(error));
    assert.equal(error.code, 'validation_failed');
    assert.equal(error.param, param);
    assert.match(error.message, message);
    return true;
  });
}

describe('recurrence: next slots', () => {
  it('a cron slot exactly at the bound counts only when inclusive', () => {
    const daily = cron('0 12 * * *');
    assert.equal(slotAfter(daily, at('2026-06-01T12:00:00.000Z'), true)?.toISOString(), '2026-06-01T12:00:00.000Z');
    assert.equal(slotAfter(daily, at('2026-06-01T12:00:00.000Z'))?.toISOString(), '2026-06-02T12:00:00.000Z');
    assert.equal(slotAfter(daily, at('2026-06-01T12:00:00.300Z'), true)?.toISOString(), '2026-06-02T12:00:00.000Z');
  });

  it('no slot before start_at, none at or after end_at', () => {
    const daily = cron('0 12 * * *', 'UTC', '2026-06-03T12:00:00.000Z', '2026-06-05T12:00:00.000Z');
    assert.deepEqual(isos(slotsAfter(daily, at('2026-06-01T00:00:00.000Z'), 10)), ['2026-06-03T12:00:00.000Z', '2026-06-04T12:00:00.000Z']);
    assert.equal(slotAfter(daily, at('2026-06-04T12:00:00.000Z')), null);
  });

  it('an interval counts from start_at, whatever the time it is asked from', () => {
    const everyTenMinutes = timing({ type: 'interval', every_seconds: 600 }, 'UTC', '2026-06-01T12:00:00.000Z');
    assert.equal(slotAfter(everyTenMinutes, at('2026-06-01T11:00:00.000Z'))?.toISOString(), '2026-06-01T12:00:00.000Z', 'the start is the first');
    assert.equal(slotAfter(everyTenMinutes, at('2026-06-01T12:00:00.000Z'), true)?.toISOString(), '2026-06-01T12:00:00.000Z');
    assert.equal(slotAfter(everyTenMinutes, at('2026-06-01T12:00:00.000Z'))?.toISOString(), '2026-06-01T12:10:00.000Z');
    assert.equal(slotAfter(everyTenMinutes, at('2026-06-01T12:34:56.000Z'), true)?.toISOString(), '2026-06-01T12:40:00.000Z');
    assert.equal(lastSlotBefore(everyTenMinutes, at('2026-06-01T12:40:00.000Z'))?.toISOString(), '2026-06-01T12:30:00.000Z');
    assert.equal(lastSlotBefore(everyTenMinutes, at('2026-06-01T12:00:00.000Z')), null);
  });

  it('an interval is real time: across a DST change its local time moves by the hour', () => {
    const daily = timing({ type: 'interval', every_seconds: 86_400 }, 'Europe/Berlin', '2026-03-28T08:00:00.000Z');
    const [first, second] = slotsAfter(daily, at('2026-03-28T00:00:00.000Z'), 2);
    assert.equal(localIso(first!, 'Europe/Berlin'), '2026-03-28T09:00:00+01:00');
    assert.equal(localIso(second!, 'Europe/Berlin'), '2026-03-29T10:00:00+02:00');
  });

  it('once has one slot, at its time, if it is within the bounds', () => {
    const once = timing({ type: 'once', at: '2026-07-01T09:00:00+02:00' });
    assert.equal(slotAfter(once, at('2026-06-01T00:00:00.000Z'))?.toISOString(), '2026-07-01T07:00:00.000Z');
    assert.equal(slotAfter(once, at('2026-07-01T07:00:00.000Z')), null);
    assert.equal(lastSlotBefore(once, at('2026-07-02T00:00:00.000Z'))?.toISOString(), '2026-07-01T07:00:00.000Z');
    assert.equal(
      slotAfter(timing({ type: 'once', at: '2026-07-01T09:00:00Z' }, 'UTC', '2020-01-01T00:00:00Z', '2026-07-01T09:00:00Z'), at('2026-06-01')),
      null,
    );
  });

  it('the last cron slot before a time is strictly before it, and stops at end_at', () => {
    const daily = cron('0 12 * * *', 'UTC', '2026-01-01T00:00:00.000Z', '2026-06-03T00:00:00.000Z');
    assert.equal(lastSlotBefore(daily, at('2026-06-02T12:00:00.000Z'))?.toISOString(), '2026-06-01T12:00:00.000Z');
    assert.equal(lastSlotBefore(daily, at('2026-06-02T12:00:00.001Z'))?.toISOString(), '2026-06-02T12:00:00.000Z');
    assert.equal(lastSlotBefore(daily, at('2026-06-09T00:00:00.000Z'))?.toISOString(), '2026-06-02T12:00:00.000Z');
  });

  it('an expression that never matches a date has no slot', () => {
    assert.equal(slotAfter(cron('0 0 30 2 *'), at('2026-01-01T00:00:00.000Z')), null);
  });
});

describe('recurrence: DST in Europe/Berlin', () => {
  const berlin = (expression: string) => cron(expression, 'Europe/Berlin');

  it('02:30 on the spring-forward day runs at 03:00, and the slot says so', () => {
    const nightly = berlin('30 2 * * *');
    const slots = slotsAfter(nightly, at('2026-03-28T00:00:00.000Z'), 3);
    assert.deepEqual(
      slots.map((slot) => localIso(slot, 'Europe/Berlin')),
      ['2026-03-28T02:30:00+01:00', '2026-03-29T03:00:00+02:00', '2026-03-30T02:30:00+02:00'],
    );
    assert.equal(gapNote(nightly, slots[1]!), '02:30 does not exist on 2026-03-29 in Europe/Berlin (the clocks go from 02:00 to 03:00); ran at 03:00');
    assert.equal(gapNote(nightly, slots[0]!), null, 'the other days need no note');
    assert.equal(gapNote(nightly, slots[2]!), null);
  });

  it('several times in the gap run once, at its end, and the note names them all', () => {
    const twice = berlin('0,30 2 * * *');
    const slots = slotsAfter(twice, at('2026-03-28T23:00:00.000Z'), 2);
    assert.deepEqual(isos(slots), ['2026-03-29T01:00:00.000Z', '2026-03-30T00:00:00.000Z']);
    assert.equal(gapNote(twice, slots[0]!), '02:00, 02:30 do not exist on 2026-03-29 in Europe/Berlin (the clocks go from 02:00 to 03:00); ran at 03:00');
  });

  it('02:30 on the fall-back day, which happens twice, runs once: at the first', () => {
    const nightly = berlin('30 2 * * *');
    const slots = slotsAfter(nightly, at('2026-10-24T12:00:00.000Z'), 2);
    assert.deepEqual(
      slots.map((slot) => localIso(slot, 'Europe/Berlin')),
      ['2026-10-25T02:30:00+02:00', '2026-10-26T02:30:00+01:00'],
    );
    assert.equal(gapNote(nightly, slots[0]!), null);
  });

  it('a fixed list of hours is fixed local time too: 14:30 stays 14:30 across both changes', () => {
    const slots = slotsAfter(berlin('30 2,14 * * *'), at('2026-03-28T23:00:00.000Z'), 2);
    assert.deepEqual(
      slots.map((slot) => localIso(slot, 'Europe/Berlin')),
      ['2026-03-29T03:00:00+02:00', '2026-03-29T14:30:00+02:00'],
    );
  });

  it('an expression with a step follows real time: no slot in the gap, the repeated half hour twice', () => {
    const everyHalfHour = berlin('*/30 * * * *');
    assert.deepEqual(
      slotsAfter(everyHalfHour, at('2026-03-29T00:00:00.000Z'), 3).map((slot) => localIso(slot, 'Europe/Berlin')),
      ['2026-03-29T01:30:00+01:00', '2026-03-29T03:00:00+02:00', '2026-03-29T03:30:00+02:00'],
    );
    assert.deepEqual(
      slotsAfter(everyHalfHour, at('2026-10-25T00:00:00.000Z'), 4).map((slot) => localIso(slot, 'Europe/Berlin')),
      ['2026-10-25T02:30:00+02:00', '2026-10-25T02:00:00+01:00', '2026-10-25T02:30:00+01:00', '2026-10-25T03:00:00+01:00'],
    );
  });
});

describe('recurrence: DST in America/Sao_Paulo', () => {
  // Brazil abolished daylight saving time in 2019 (decree 9,772); the tz data the runtime carries
  // says so. The same expression shows the shift in 2018, when the zone still had it, and none since.

  it('the runtime tz data has no DST for Sao Paulo any more: -03:00 all year round', () => {
    for (const day of ['2026-01-15', '2026-02-22', '2026-06-15', '2026-11-01', '2026-11-08', '2026-12-15']) {
      assert.equal(offsetMinutes(at(`${day}T12:00:00.000Z`), 'America/Sao_Paulo'), -180, day);
    }
  });

  it('00:30 on the first Sunday of November runs at 00:30 local in 2026, no shift and no note', () => {
    const nightly = cron('30 0 * * *', 'America/Sao_Paulo');
    const slots = slotsAfter(nightly, at('2026-10-31T12:00:00.000Z'), 3);
    assert.deepEqual(
      slots.map((slot) => localIso(slot, 'America/Sao_Paulo')),
      ['2026-11-01T00:30:00-03:00', '2026-11-02T00:30:00-03:00', '2026-11-03T00:30:00-03:00'],
    );
    assert.ok(slots.every((slot) => gapNote(nightly, slot) === null));
  });

  it('in 2018, when Sao Paulo still sprang forward at midnight, the same expression ran at 01:00 and said so', () => {
    const nightly = cron('30 0 * * *', 'America/Sao_Paulo', '2018-01-01T00:00:00.000Z');
    const slots = slotsAfter(nightly, at('2018-11-03T12:00:00.000Z'), 2);
    assert.deepEqual(
      slots.map((slot) => localIso(slot, 'America/Sao_Paulo')),
      ['2018-11-04T01:00:00-02:00', '2018-11-05T00:30:00-02:00'],
    );
    assert.equal(gapNote(nightly, slots[0]!), '00:30 does not exist on 2018-11-04 in America/Sao_Paulo (the clocks go from 00:00 to 01:00); ran at 01:00');
  });
});

describe('recurrence: checks', () => {
  const now = at('2026-06-01T12:00:00.000Z');
  const check = (recurrence: ScheduleRecurrence, timeZone = 'UTC') => checkRecurrence(recurrence, timeZone, now, now);

  it('a cron firing every minute is refused on /recurrence/expression, naming the two firings', () => {
    assertRefused(() => check({ type: 'cron', expression: '* * * * *' }), '/recurrence/expression', /60 s apart .*at least 5 minutes apart/);
  });

  it('firings closer than 5 minutes anywhere in the next 50 are refused; exactly 5 minutes is accepted', () => {
    assertRefused(() => check({ type: 'cron', expression: '*/4 * * * *' }), '/recurrence/expression', /at least 5 minutes/);
    assertRefused(() => check({ type: 'cron', expression: '0,3 9 * * *' }), '/recurrence/expression', /180 s apart/);
    check({ type: 'cron', expression: '*/5 * * * *' });
    check({ type: 'cron', expression: '0 9 * * 1-5' });
  });

  it('anything but five fields is refused: six fields, a nickname', () => {
    assertRefused(() => check({ type: 'cron', expression: '0 0 9 * * *' }), '/recurrence/expression', /5 fields .* it has 6/);
    assertRefused(() => check({ type: 'cron', expression: '@daily' }), '/recurrence/expression', /5 fields/);
  });

  it("an expression croner cannot read is refused with croner's reason", () => {
    assertRefused(() => check({ type: 'cron', expression: '61 * * * *' }), '/recurrence/expression', /not a valid cron expression/);
    assertRefused(() => check({ type: 'cron', expression: '0 9 * * XYZ' }), '/recurrence/expression', /not a valid cron expression/);
  });

  it('an expression that never matches a date is refused', () => {
    assertRefused(() => check({ type: 'cron', expression: '0 0 30 2 *' }), '/recurrence/expression', /never matches/);
  });

  it('once in the past is refused on /recurrence/at; now is accepted', () => {
    assertRefused(() => check({ type: 'once', at: '2026-06-01T11:59:59.999Z' }), '/recurrence/at', /past/);
    check({ type: 'once', at: '2026-06-01T12:00:00.000Z' });
  });
});

describe('recurrence: time zones', () => {
  it('IANA names are accepted in their canonical case; aliases keep their name', () => {
    assert.equal(resolveTimeZone('Europe/Berlin'), 'Europe/Berlin');
    assert.equal(resolveTimeZone('europe/berlin'), 'Europe/Berlin');
    assert.equal(resolveTimeZone('UTC'), 'UTC');
    assert.equal(resolveTimeZone('America/Argentina/Buenos_Aires'), 'America/Argentina/Buenos_Aires');
    assert.equal(resolveTimeZone('Asia/Calcutta'), 'Asia/Calcutta');
  });

  it('unknown names and bare offsets are refused', () => {
    for (const name of ['Mars/Olympus_Mons', 'Europe/Berlinn', '+01:00', 'GMT+1:00', 'Europe/', '', ' Europe/Berlin']) {
      assert.equal(resolveTimeZone(name), undefined, JSON.stringify(name));
    }
  });

  it('local times carry the offset of the moment, including odd ones', () => {
    assert.equal(localIso(at('2026-06-01T12:00:00.000Z'), 'UTC'), '2026-06-01T12:00:00+00:00');
    assert.equal(localIso(at('2026-06-01T12:00:00.000Z'), 'Asia/Kathmandu'), '2026-06-01T17:45:00+05:45');
    assert.equal(localIso(at('2026-06-01T12:00:00.000Z'), 'America/Sao_Paulo'), '2026-06-01T09:00:00-03:00');
  });
});

describe('recurrence: descriptions', () => {
  it('cron in words, with the time zone', () => {
    assert.equal(describeRecurrence({ type: 'cron', expression: '0 9 * * 1-5' }, 'Europe/Berlin'), 'At 09:00, Monday through Friday (Europe/Berlin)');
    assert.equal(describeRecurrence({ type: 'cron', expression: '*/15 * * * *' }, 'UTC'), 'Every 15 minutes (UTC)');
  });

  it('once as a local date and time', () => {
    assert.equal(describeRecurrence({ type: 'once', at: '2026-07-01T07:00:00Z' }, 'Europe/Berlin'), 'Once, on 2026-07-01 at 09:00 (Europe/Berlin)');
  });

  it('an interval in its largest whole unit', () => {
    assert.equal(describeRecurrence({ type: 'interval', every_seconds: 300 }, 'UTC'), 'Every 5 minutes');
    assert.equal(describeRecurrence({ type: 'interval', every_seconds: 3600 }, 'UTC'), 'Every hour');
    assert.equal(describeRecurrence({ type: 'interval', every_seconds: 5400 }, 'UTC'), 'Every 90 minutes');
    assert.equal(describeRecurrence({ type: 'interval', every_seconds: 172_800 }, 'UTC'), 'Every 2 days');
    assert.equal(describeRecurrence({ type: 'interval', every_seconds: 301 }, 'UTC'), 'Every 301 seconds');
  });
});
