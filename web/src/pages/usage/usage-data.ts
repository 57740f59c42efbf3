import { useQuery } from '@tanstack/react-query';
import type { GroupBy, MeterName, Usage, UsageBreakdownRow } from '../../../../src/modules/usage/usage.schemas.ts';
import { useApi } from '../../auth/SessionContext.tsx';

export type { MeterName, Usage, UsageBreakdownRow };
export type UsageMeter = Usage['meters'][number];

/** What a page of the usage reads: a month (`current` or `YYYY-MM`) and, optionally, one number. */
export interface UsageFilter {
  period: string;
  connectionId?: string;
}

const query = (filter: UsageFilter) => ({ period: filter.period, connection_id: filter.connectionId });

export function useUsage(filter: UsageFilter) {
  const api = useApi();
  return useQuery({
    queryKey: ['usage', filter.period, filter.connectionId ?? null],
    queryFn: ({ signal }) => api.get<Usage>('/v1/usage', { query: query(filter), signal }),
  });
}

/** One meter summed per group over the month: every page of it (a month has at most 31 days, an organization few numbers). */
export function useBreakdown(meter: MeterName, groupBy: GroupBy, filter: UsageFilter, options: { enabled?: boolean } = {}) {
  const api = useApi();
  return useQuery({
    queryKey: ['usage', filter.period, filter.connectionId ?? null, 'breakdown', meter, groupBy],
    queryFn: () => api.all<UsageBreakdownRow>('/v1/usage/breakdown', { meter, group_by: groupBy, ...query(filter) }),
    enabled: options.enabled ?? true,
  });
}

/** The thresholds at which the service warns (`usage.threshold_reached`): docs/usage.md#plans-and-limits. */
export const THRESHOLD_PERCENTS = [50, 80, 100] as const;

export const METER_LABELS: Record<MeterName, string> = {
  messages_sent: 'Messages sent',
  'messages_sent.marketing': 'Sent: marketing templates',
  'messages_sent.utility': 'Sent: utility templates',
  'messages_sent.authentication': 'Sent: authentication templates',
  'messages_sent.service': 'Sent: service (replies in the window)',
  messages_received: 'Messages received',
  notifications_sent: 'Notifications sent',
  automation_runs: 'Automation runs',
  webhook_deliveries: 'Webhook deliveries',
  media_bytes: 'Media stored',
  api_requests: 'API requests',
  unique_recipients_24h: 'Recipients in the last 24 hours',
};

export const CATEGORIES = ['marketing', 'utility', 'authentication', 'service'] as const;

const numbers = new Intl.NumberFormat('en');

export function formatQuantity(quantity: number, unit: string): string {
  if (unit !== 'bytes') return numbers.format(quantity);
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = quantity;
  let index = 0;
  while (value >= 1024 && index < units.length - 1) {
    value /= 1024;
    index++;
  }
  // 1 GiB, 1.5 GiB, 50 GiB: one decimal only where it says something.
  return `${index === 0 || value >= 10 ? Math.round(value) : Number(value.toFixed(1))} ${units[index]}`;
}

/** Every UTC day of a period, as unix seconds at midnight, and as the API's `YYYY-MM-DD`. */
export function daysOf(usage: Pick<Usage, 'period_start' | 'period_end'>): { seconds: number[]; keys: string[] } {
  const seconds: number[] = [];
  const keys: string[] = [];
  for (let at = Date.parse(usage.period_start); at < Date.parse(usage.period_end); at += 86_400_000) {
    seconds.push(at / 1000);
    keys.push(new Date(at).toISOString().slice(0, 10));
  }
  return { seconds, keys };
}

/** A breakdown by day laid on every day of the month (a day without usage has no row: zero). */
export function perDay(rows: UsageBreakdownRow[] | undefined, keys: string[]): number[] {
  const byDay = new Map((rows ?? []).map((row) => [row.day, row.quantity]));
  return keys.map((key) => byDay.get(key) ?? 0);
}

/** The twelve months a person may pick, newest first, from the current period's start (the service's clock, not the browser's). */
export function recentMonths(currentStart: string): { value: string; label: string }[] {
  const start = new Date(currentStart);
  return Array.from({ length: 12 }, (_, back) => {
    const month = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() - back, 1));
    const label = month.toLocaleDateString('en', { month: 'long', year: 'numeric', timeZone: 'UTC' });
    return back === 0 ? { value: 'current', label: `${label} (this month)` } : { value: month.toISOString().slice(0, 7), label };
  });
}

export function monthLabel(usage: Pick<Usage, 'period_start'>): string {
  return new Date(usage.period_start).toLocaleDateString('en', { month: 'long', year: 'numeric', timeZone: 'UTC' });
}
