import { useQueries } from '@tanstack/react-query';
import { useCallback, useMemo, type ReactNode } from 'react';
import type uPlot from 'uplot';
import type { Connection } from '../../api/types.ts';
import { useApi } from '../../auth/SessionContext.tsx';
import { Section, tableClass } from '../../ui/admin.tsx';
import { Empty, ErrorMessage, Loading } from '../../ui/controls.tsx';
import { connectionLabel } from '../connections/connections-data.ts';
import { Chart, PALETTE, utcDates, type UPlot } from './Chart.tsx';
import {
  CATEGORIES,
  daysOf,
  formatQuantity,
  monthLabel,
  perDay,
  THRESHOLD_PERCENTS,
  useBreakdown,
  type Usage,
  type UsageBreakdownRow,
  type UsageFilter,
} from './usage-data.ts';
import styles from './usage.module.css';

const count = (value: number) => formatQuantity(value, 'messages');
const DAY = (lib: UPlot) => ({ time: true, tzDate: utcDates(lib) }) as const;

/** A chart's frame: its title, the picture, and the same figures in words and in a table. */
function ChartFigure({ title, summary, table, children }: { title: string; summary: ReactNode; table: ReactNode; children: ReactNode }) {
  return (
    <Section title={title}>
      <figure className={styles.figure}>
        {children}
        <figcaption className={styles.summary}>{summary}</figcaption>
        <details className={styles.data}>
          <summary>The figures as a table</summary>
          {table}
        </details>
      </figure>
    </Section>
  );
}

/** Messages sent over the month, added up day by day, against the plan's limit and the thresholds it warns at. */
export function PlanChart({ usage, filter }: { usage: Usage; filter: UsageFilter }) {
  const sent = useBreakdown('messages_sent', 'day', filter);
  const meter = usage.meters.find((candidate) => candidate.meter === 'messages_sent');
  const limit = meter?.limit ?? null;
  const thresholds = useMemo(
    () =>
      limit === null
        ? []
        : THRESHOLD_PERCENTS.map((percent) => ({
            percent,
            at: Math.ceil((limit * percent) / 100),
            reached: (meter?.quantity ?? 0) >= Math.ceil((limit * percent) / 100),
          })),
    [limit, meter?.quantity],
  );
  const days = useMemo(() => daysOf(usage), [usage]);
  const daily = useMemo(() => perDay(sent.data, days.keys), [sent.data, days]);
  const cumulative = useMemo(() => {
    // Days still ahead in the current month have no total yet: a gap, not a flat line.
    const today = Date.now() / 1000;
    let total = 0;
    return daily.map((quantity, index) => ((days.seconds[index] ?? 0) > today ? null : (total += quantity)));
  }, [daily, days]);
  const data = useMemo<uPlot.AlignedData>(
    () => [days.seconds, cumulative, ...thresholds.map((threshold) => days.seconds.map(() => threshold.at))],
    [days, cumulative, thresholds],
  );
  const options = useCallback(
    (lib: UPlot): Omit<uPlot.Options, 'width' | 'height'> => ({
      scales: { x: DAY(lib), y: { range: (_u, _min, max) => [0, Math.max(max, limit ?? 0, 1) * 1.05] } },
      series: [
        {},
        { label: 'Messages sent, month to date', stroke: PALETTE[0], width: 2, fill: 'rgb(0 114 178 / 8%)' },
        ...thresholds.map((threshold) => ({
          label: threshold.percent === 100 ? `Limit (${count(threshold.at)})` : `${threshold.percent} % (${count(threshold.at)})`,
          stroke: threshold.percent === 100 ? '#b42318' : '#8a5a00',
          dash: [6, 4],
          width: 1,
          points: { show: false },
        })),
      ],
      legend: { live: false },
    }),
    [limit, thresholds],
  );
  const reached = thresholds.filter((threshold) => threshold.reached).map((threshold) => `${threshold.percent} %`);
  return (
    <ChartFigure
      title="Messages sent against the plan"
      summary={
        <>
          {count(meter?.quantity ?? 0)} messages sent in {monthLabel(usage)}
          {limit === null ? (
            filter.connectionId ? (
              ' through this number (limits are for the whole organization).'
            ) : (
              '; the plan sets no limit.'
            )
          ) : (
            <>
              {' '}
              of the {usage.plan} plan&apos;s {count(limit)} ({meter?.percent ?? 0} %). Thresholds:{' '}
              <span data-testid="thresholds">{thresholds.map((threshold) => `${threshold.percent} % at ${count(threshold.at)}`).join(', ')}</span>;{' '}
              {reached.length ? `reached: ${reached.join(', ')}.` : 'none reached yet.'}
            </>
          )}
        </>
      }
      table={
        <table className={tableClass}>
          <thead>
            <tr>
              <th scope="col">Day (UTC)</th>
              <th scope="col">Sent that day</th>
              <th scope="col">Month to date</th>
            </tr>
          </thead>
          <tbody>
            {days.keys.map((day, index) => (
              <tr key={day}>
                <th scope="row">{day}</th>
                <td>{count(daily[index] ?? 0)}</td>
                <td>{cumulative[index] === null ? '—' : count(cumulative[index] ?? 0)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      }
    >
      <Drawn query={sent}>
        <Chart options={options} data={data} />
      </Drawn>
    </ChartFigure>
  );
}

/** Messages sent per day, one line per category (marketing, utility, authentication templates, and service replies). */
export function CategoryChart({ usage, filter }: { usage: Usage; filter: UsageFilter }) {
  const api = useApi();
  const queries = useQueries({
    queries: CATEGORIES.map((category) => ({
      queryKey: ['usage', filter.period, filter.connectionId ?? null, 'breakdown', `messages_sent.${category}`, 'day'],
      queryFn: () =>
        api.all<UsageBreakdownRow>('/v1/usage/breakdown', {
          meter: `messages_sent.${category}`,
          group_by: 'day',
          period: filter.period,
          connection_id: filter.connectionId,
        }),
    })),
  });
  const days = useMemo(() => daysOf(usage), [usage]);
  const rows = queries.map((query) => query.data);
  const series = useMemo(
    () => CATEGORIES.map((category, index) => ({ category, values: perDay(rows[index], days.keys) })),
    // Each query's data keeps its identity until it changes; CATEGORIES fixes how many there are.
    [days, ...rows],
  );
  const data = useMemo<uPlot.AlignedData>(() => [days.seconds, ...series.map((line) => line.values)], [days, series]);
  const options = useCallback(
    (lib: UPlot): Omit<uPlot.Options, 'width' | 'height'> => ({
      scales: { x: DAY(lib), y: { range: (_u, _min, max) => [0, Math.max(max, 1) * 1.1] } },
      series: [{}, ...CATEGORIES.map((category, index) => ({ label: category, stroke: PALETTE[index], width: 2 }))],
      legend: { live: false },
    }),
    [],
  );
  const totals = series.map((line) => ({ category: line.category, total: line.values.reduce((sum, value) => sum + value, 0) }));
  const pending = queries.some((query) => query.isPending);
  const error = queries.find((query) => query.error)?.error;
  return (
    <ChartFigure
      title="Messages sent per day, by category"
      summary={`${monthLabel(usage)}: ${totals.map((line) => `${count(line.total)} ${line.category}`).join(', ')}.`}
      table={
        <table className={tableClass}>
          <thead>
            <tr>
              <th scope="col">Day (UTC)</th>
              {CATEGORIES.map((category) => (
                <th key={category} scope="col">
                  {category}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {days.keys.map((day, index) => (
              <tr key={day}>
                <th scope="row">{day}</th>
                {series.map((line) => (
                  <td key={line.category}>{count(line.values[index] ?? 0)}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      }
    >
      {pending ? <Loading /> : error ? <ErrorMessage error={error} /> : <Chart options={options} data={data} />}
    </ChartFigure>
  );
}

/** The month's messages sent per number, as bars. */
export function ConnectionChart({ usage, filter, connections }: { usage: Usage; filter: UsageFilter; connections: Connection[] }) {
  const perConnection = useBreakdown('messages_sent', 'connection', filter);
  const bars = useMemo(
    () =>
      (perConnection.data ?? []).map((row) => {
        const connection = connections.find((candidate) => candidate.id === row.connection_id);
        return { label: connection ? connectionLabel(connection) : row.connection_id ? row.connection_id : 'No number', quantity: row.quantity };
      }),
    [perConnection.data, connections],
  );
  const data = useMemo<uPlot.AlignedData>(() => [bars.map((_, index) => index), bars.map((bar) => bar.quantity)], [bars]);
  const options = useCallback(
    (lib: UPlot): Omit<uPlot.Options, 'width' | 'height'> => ({
      scales: { x: { time: false, range: () => [-0.5, bars.length - 0.5] }, y: { range: (_u, _min, max) => [0, Math.max(max, 1) * 1.1] } },
      axes: [{ splits: () => bars.map((_, index) => index), values: (_u, splits) => splits.map((split) => bars[split]?.label ?? '') }, {}],
      series: [{}, { label: 'Messages sent', fill: PALETTE[0], stroke: PALETTE[0], paths: lib.paths.bars?.({ size: [0.6, 80] }), points: { show: false } }],
      legend: { show: false },
    }),
    [bars],
  );
  return (
    <ChartFigure
      title="Messages sent per number"
      summary={
        bars.length
          ? `${monthLabel(usage)}: ${bars.map((bar) => `${bar.label} ${count(bar.quantity)}`).join(', ')}.`
          : `No number sent a live message in ${monthLabel(usage)}.`
      }
      table={
        <table className={tableClass}>
          <thead>
            <tr>
              <th scope="col">Number</th>
              <th scope="col">Messages sent</th>
            </tr>
          </thead>
          <tbody>
            {bars.map((bar) => (
              <tr key={bar.label}>
                <th scope="row">{bar.label}</th>
                <td>{count(bar.quantity)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      }
    >
      <Drawn query={perConnection} empty={bars.length === 0 ? 'Nothing to chart yet: messages sent through a live number appear here.' : undefined}>
        <Chart options={options} data={data} />
      </Drawn>
    </ChartFigure>
  );
}

/** A chart once its figures arrived: loading, the API's error, or what to do when there is nothing yet. */
function Drawn({ query, empty, children }: { query: { isPending: boolean; error: unknown }; empty?: string; children: ReactNode }) {
  if (query.isPending) return <Loading />;
  if (query.error) return <ErrorMessage error={query.error} />;
  if (empty) return <Empty>{empty}</Empty>;
  return <>{children}</>;
}
