/**
 * What the automation pages share: the API's types (from the server's schemas, types only), the
 * query keys of this folder (kept here, not in api/keys.ts: no other part of the app reads them),
 * and the words for statuses.
 */
import type { RunStatus } from '../../../../src/modules/runs/runs.schemas.ts';

export type { Automation, AutomationVersion, Deployment } from '../../../../src/modules/automations/automations.schemas.ts';
export type { Definition } from '../../../../src/modules/automations/definition.schemas.ts';
export type { Run, RunEvent, RunStatus } from '../../../../src/modules/runs/runs.schemas.ts';
export type { Approval, ApprovalStatus } from '../../../../src/modules/approvals/approvals.schemas.ts';
export type { Connector, ConnectorAccount, ConnectorField } from '../../../../src/modules/connectors/connectors.schemas.ts';

export const automationKeys = {
  all: ['automations'] as const,
  list: (filters: object) => ['automations', 'list', filters] as const,
  one: (id: string) => ['automations', 'one', id] as const,
  versions: (id: string) => ['automations', 'versions', id] as const,
  version: (id: string, number: number) => ['automations', 'version', id, number] as const,
};

export const runKeys = {
  all: ['runs'] as const,
  list: (automationId: string, filters: object) => ['runs', 'list', automationId, filters] as const,
  /** Everything shown of one run: the run and its event log. */
  one: (id: string) => ['runs', 'one', id] as const,
  events: (id: string) => ['runs', 'one', id, 'events'] as const,
};

export const approvalKeys = {
  all: ['approvals'] as const,
  list: (filters: object) => ['approvals', 'list', filters] as const,
};

export const connectorKeys = {
  catalogue: ['connectors'] as const,
  accounts: ['connector-accounts'] as const,
  accountList: (filters: object) => ['connector-accounts', filters] as const,
};

/** The events that change a run or its approvals (docs/automations.md): pages showing them listen for these. */
export const RUN_EVENT_TYPES = ['automation.run_started', 'automation.run_finished', 'automation.run_failed', 'approval.requested', 'approval.decided'];

/** The statuses of an active run (the server's ACTIVE_RUN_STATUSES: its schema file cannot be bundled). */
export const ACTIVE_RUN_STATUSES = ['queued', 'running', 'waiting', 'paused'] as const satisfies readonly RunStatus[];
export const RUN_STATUS_OPTIONS = [...ACTIVE_RUN_STATUSES, 'completed', 'canceled', 'failed', 'timed_out'] as const satisfies readonly RunStatus[];

export function isActive(status: RunStatus): boolean {
  return (ACTIVE_RUN_STATUSES as readonly string[]).includes(status);
}

type Tone = 'good' | 'bad' | 'warn' | undefined;

const TONES: Record<string, Tone> = {
  enabled: 'good',
  active: 'good',
  completed: 'good',
  approved: 'good',
  disabled: 'warn',
  paused: 'warn',
  waiting: 'warn',
  pending: 'warn',
  needs_reauth: 'warn',
  failed: 'bad',
  timed_out: 'bad',
  rejected: 'bad',
  error: 'bad',
  revoked: 'bad',
};

/** The badge colour of a status; the badge always says the status in words too. */
export function toneOf(status: string): Tone {
  return TONES[status];
}

export function words(value: string): string {
  return value.replaceAll('_', ' ');
}

export function formatTime(iso: string | null | undefined): string {
  return iso ? new Date(iso).toLocaleString() : '—';
}
