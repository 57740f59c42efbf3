import { createApprovalsModule } from '../modules/approvals/index.ts';
import { createAutomationsModule } from '../modules/automations/index.ts';
import { createConnectorsModule } from '../modules/connectors/index.ts';
import { createRunsModule } from '../modules/runs/index.ts';
import { createSchedulesModule } from '../modules/schedules/index.ts';
import type { Area } from './area.ts';
import type { Core } from './core.ts';
import type { MessagingServices } from './messaging.ts';
import type { OutreachServices } from './outreach.ts';
import type { PlatformServices } from './platform.ts';

/**
 * What the business has automated: automations and their versions, the runs that execute them, the
 * approvals runs ask people for, connector accounts their `http_request` steps call through, and
 * schedules, whose occurrences send notifications or start runs. Runs are built on automations and
 * approvals, and hand each back what it needs of runs (`attachRuns`).
 */
export function buildAutomation(
  core: Core,
  services: Pick<PlatformServices, 'audit' | 'mail' | 'organizations'> &
    Pick<MessagingServices, 'connections' | 'templates' | 'conversations' | 'contacts' | 'locks' | 'sending'> &
    Pick<OutreachServices, 'notifications'>,
) {
  const { db, clock, events, queue, log, secrets, config } = core;
  const connectors = createConnectorsModule({
    db,
    clock,
    secrets,
    allowPrivateNetworks: config.webhookAllowPrivateNetworks,
    audit: services.audit,
    connections: services.connections,
  });
  const automations = createAutomationsModule({
    db,
    clock,
    events,
    audit: services.audit,
    mail: services.mail,
    connections: services.connections,
    templates: services.templates,
    connectors: connectors.service,
    organizations: services.organizations,
  });
  const approvals = createApprovalsModule({ db, clock, queue, events });
  const runs = createRunsModule({
    db,
    clock,
    events,
    queue,
    log,
    automations: automations.service,
    approvals: approvals.service,
    connections: services.connections,
    contacts: services.contacts,
    conversations: services.conversations,
    locks: services.locks,
    sending: services.sending,
    connectors: connectors.service,
  });
  const schedules = createSchedulesModule({ db, clock, queue, audit: services.audit, targets: services.notifications, runs: runs.service.scheduleTargets });
  return {
    modules: [connectors, automations, approvals, runs, schedules],
    services: {
      connectors: connectors.service,
      automations: automations.service,
      approvals: approvals.service,
      runs: runs.service,
      schedules: schedules.service,
    },
  } satisfies Area<object>;
}

export type AutomationServices = ReturnType<typeof buildAutomation>['services'];
