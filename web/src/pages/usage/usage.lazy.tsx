import { createLazyRoute } from '@tanstack/react-router';
import { useId, useState } from 'react';
import { AdminPage, Badge, Section, tableClass } from '../../ui/admin.tsx';
import { ErrorMessage, Loading } from '../../ui/controls.tsx';
import { connectionLabel, useConnections } from '../connections/connections-data.ts';
import { CategoryChart, ConnectionChart, PlanChart } from './UsageCharts.tsx';
import { formatQuantity, METER_LABELS, monthLabel, recentMonths, useUsage, type UsageFilter, type UsageMeter } from './usage-data.ts';
import styles from './usage.module.css';

/** The organization's usage for a month: the meters against the plan, and charts of the messages sent. */
function UsagePage() {
  const [filter, setFilter] = useState<UsageFilter>({ period: 'current' });
  // The current month's answer dates the period picker by the service's clock.
  const current = useUsage({ period: 'current' });
  const usage = useUsage(filter);
  const connections = useConnections();
  const periodId = useId();
  const numberId = useId();
  const filters = (
    <div className={styles.filters}>
      <span className={styles.filter}>
        <label htmlFor={periodId}>Period</label>
        <select id={periodId} value={filter.period} onChange={(event) => setFilter({ ...filter, period: event.target.value })}>
          {(current.data ? recentMonths(current.data.period_start) : [{ value: 'current', label: 'This month' }]).map((month) => (
            <option key={month.value} value={month.value}>
              {month.label}
            </option>
          ))}
        </select>
      </span>
      <span className={styles.filter}>
        <label htmlFor={numberId}>Number</label>
        <select id={numberId} value={filter.connectionId ?? ''} onChange={(event) => setFilter({ ...filter, connectionId: event.target.value || undefined })}>
          <option value="">All numbers</option>
          {connections.data?.map((connection) => (
            <option key={connection.id} value={connection.id}>
              {connectionLabel(connection)}
              {connection.status === 'disconnected' ? ' (disconnected)' : ''}
            </option>
          ))}
        </select>
      </span>
    </div>
  );
  return (
    <AdminPage
      title="Usage"
      description="What the organization's live traffic used, per calendar month (UTC), against its plan. Test numbers are never counted."
      actions={filters}
    >
      {usage.isPending ? (
        <Loading />
      ) : usage.error ? (
        <ErrorMessage error={usage.error} />
      ) : (
        <>
          <Section title={`Meters, ${monthLabel(usage.data)}`}>
            <p className={styles.lede}>
              Plan: <strong>{usage.data.plan}</strong>.{' '}
              {filter.connectionId
                ? "One number's share: the plan's limits are for the whole organization, so they are not shown here."
                : 'The service warns at 50 %, 80 % and 100 % of each limit; on the free plan no message is sent past the limit.'}
            </p>
            <MetersTable meters={usage.data.meters} />
          </Section>
          <PlanChart usage={usage.data} filter={filter} />
          <CategoryChart usage={usage.data} filter={filter} />
          {!filter.connectionId && <ConnectionChart usage={usage.data} filter={filter} connections={connections.data ?? []} />}
        </>
      )}
    </AdminPage>
  );
}

function MetersTable({ meters }: { meters: UsageMeter[] }) {
  return (
    <table className={`${tableClass} ${styles.meters}`} aria-label="Meters">
      <thead>
        <tr>
          <th scope="col">Meter</th>
          <th scope="col">Used</th>
          <th scope="col">Limit</th>
          <th scope="col">Of the limit</th>
        </tr>
      </thead>
      <tbody>
        {meters.map((meter) => (
          <tr key={meter.meter} data-meter={meter.meter}>
            <th scope="row">{METER_LABELS[meter.meter]}</th>
            <td>{formatQuantity(meter.quantity, meter.unit)}</td>
            <td>{meter.limit === null ? 'Unlimited' : formatQuantity(meter.limit, meter.unit)}</td>
            <td>{meter.percent === null ? '—' : <Percent value={meter.percent} />}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Percent({ value }: { value: number }) {
  const tone = value >= 100 ? 'bad' : value >= 80 ? 'warn' : undefined;
  return (
    <span className={styles.percent}>
      <span className={styles.bar} aria-hidden="true">
        <span className={styles.fill} data-tone={tone} style={{ width: `${Math.min(100, value)}%` }} />
      </span>
      {tone ? <Badge tone={tone}>{value} %</Badge> : `${value} %`}
    </span>
  );
}

export const Route = createLazyRoute('/app/usage')({ component: UsagePage });
