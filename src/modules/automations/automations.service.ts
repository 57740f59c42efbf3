import type { Db, Trx } from '../../db/connect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { AutomationsTable, AutomationVersionsTable } from '../../db/schema.ts';
import type { EventSink } from '../../events/emit.ts';
import { SECOND, type Clock } from '../../lib/clock.ts';
import { AppError, invalidParam, notFound, type ErrorDetail } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { RecentReads } from '../../lib/recent-reads.ts';
import { mergeMetadata } from '../../lib/metadata.ts';
import { StoredJson } from '../../lib/stored-json.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import type { ConnectionsService } from '../connections/index.ts';
import type { ConnectorsService } from '../connectors/index.ts';
import type { Actor, Principal } from '../credentials/principal.ts';
import type { Mode } from '../credentials/scopes.schemas.ts';
import type { MailService } from '../mail/index.ts';
import type { OrganizationsService } from '../organizations/index.ts';
import type { TemplatesService } from '../templates/index.ts';
import type { AutomationsForRuns, DeployedAutomation, InFlightPolicy, InFlightRuns } from './automation-runs.ts';
import type {
  Automation,
  AutomationStatus,
  AutomationVersion,
  CreateAutomationInput,
  CreateVersionInput,
  DeployInput,
  Deployment,
  DisableInput,
  DisabledReason,
  RollbackInput,
  UpdateAutomationInput,
} from './automations.schemas.ts';
import type { AutomationChanges, AutomationScope, AutomationsStore } from './automations.store.ts';
import { checkDefinition, templatesUsed, type DefinitionProblem } from './definition/check-definition.ts';
import { MAX_DEFINITION_BYTES, type Definition } from './definition.schemas.ts';

/** Versions an automation keeps; older ones are pruned, except those deployed now or before, and those runs started on. */
export const MAX_VERSIONS_KEPT = 100;
/** Enabled automations an organization may have at once, on every plan. */
export const MAX_ENABLED_AUTOMATIONS = 100;
/** Failed (or timed-out) live runs in a row after which the service disables the automation. */
export const FAILURES_BEFORE_DISABLE = 10;
/** Parsed definitions kept for the trigger look-up; versions never change, so an entry is never stale. */
const DEFINITION_CACHE_SIZE = 1000;
/** `details` holds at most this many entries (the spec's validation rule). */
const MAX_DETAILS = 10;

function toAutomation(row: AutomationsTable): Automation {
  return {
    id: row.id,
    object: 'automation',
    name: row.name,
    description: row.description,
    mode: row.mode as Mode,
    connection_id: row.connection_id,
    status: row.status as AutomationStatus,
    disabled_reason: row.disabled_reason as DisabledReason | null,
    trigger: row.trigger_type === null ? null : { type: row.trigger_type as Definition['trigger']['type'], event: row.trigger_event },
    deployed_version: row.deployed_version,
    previous_deployed_version: row.previous_deployed_version,
    latest_version: row.latest_version,
    consecutive_failures: row.consecutive_failures,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function toVersion(row: AutomationVersionsTable): AutomationVersion {
  return {
    id: row.id,
    object: 'automation_version',
    automation_id: row.automation_id,
    number: row.number,
    definition: new StoredJson<Definition>(row.definition),
    message: row.message,
    created_by: row.created_by,
    warnings: JSON.parse(row.warnings) as string[],
    created_at: row.created_at,
  };
}

function scopeOf(principal: Principal): AutomationScope {
  return { organizationId: principal.organizationId, connectionId: principal.connectionId ?? undefined, mode: principal.mode === 'test' ? 'test' : undefined };
}

/** Dashboard tokens write as their member; keys and OAuth tokens as themselves. */
const authorOf = (principal: Principal): string => principal.memberId ?? principal.credentialId;

const details = (problems: readonly ErrorDetail[]): ErrorDetail[] => problems.slice(0, MAX_DETAILS);

/** A definition the schema accepted but the graph or an expression refuses: every problem, the first as `param`. */
function definitionRefused(problems: readonly DefinitionProblem[]): AppError {
  const first = problems[0]!;
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more in details)` : '';
  return new AppError('validation_failed', `${first.pointer} ${first.message}.${more}`, {
    param: first.pointer,
    details: details(problems.map((problem) => ({ param: problem.pointer, code: 'invalid_definition', message: problem.message }))),
  });
}

/** Everything a version is checked for before it is stored: its size, then its graph and expressions. */
function checkVersion(definition: Definition): void {
  if (Buffer.byteLength(JSON.stringify(definition)) > MAX_DEFINITION_BYTES) {
    throw invalidParam('/definition', `is larger than ${MAX_DEFINITION_BYTES / 1024} KB as JSON`, 'too_large');
  }
  const problems = checkDefinition(definition, '/definition');
  if (problems.length > 0) throw definitionRefused(problems);
}

/** What keeps a version from being deployed, found by reading: each entry names its pointer in the version (`/definition/...`). */
interface Blockers {
  templates: ErrorDetail[];
  /** Risky steps not gated by an approval, when the organization requires that (docs/automations.md#risky-actions). */
  ungated: ErrorDetail[];
}

export interface AutomationsServiceDeps {
  db: Db;
  store: AutomationsStore;
  clock: Clock;
  events: EventSink;
  audit: Pick<AuditEventsService, 'record'>;
  mail: Pick<MailService, 'notifyOwners'>;
  connections: Pick<ConnectionsService, 'getForReference'>;
  templates: Pick<TemplatesService, 'approvedAmong'>;
  connectors: Pick<ConnectorsService, 'assertUsableForDeploy'>;
  organizations: Pick<OrganizationsService, 'get'>;
}

const TRIGGERS_TAG = 'triggers';

export function createAutomationsService(deps: AutomationsServiceDeps) {
  const { db, clock, events, audit, mail, connections, templates, connectors, organizations } = deps;
  const definitions = new Map<string, Definition>();
  let runs: InFlightRuns | undefined;
  /**
   * Every inbound message and every event asks which automations it may start: the answer is
   * remembered for a second. Any write to an automation in this process forgets them all at once
   * (writes are rare: deploys, enables, disables); another process's write is seen within the second.
   */
  const triggers = new RecentReads<DeployedAutomation[]>({ clock, ttlMs: SECOND, maxEntries: 10_000 });
  const store: AutomationsStore = {
    ...deps.store,
    async insert(executor, row) {
      await deps.store.insert(executor, row);
      triggers.forget(TRIGGERS_TAG);
    },
    async update(executor, id, changes) {
      await deps.store.update(executor, id, changes);
      triggers.forget(TRIGGERS_TAG);
    },
  };

  /** The runs module, for what changes runs in flight; it attaches itself when it is built. */
  function inFlight(): InFlightRuns {
    if (!runs) throw new Error('runs are not attached');
    return runs;
  }

  function definitionOf(version: Pick<AutomationVersionsTable, 'id' | 'definition'>): Definition {
    const cached = definitions.get(version.id);
    if (cached) return cached;
    const parsed = JSON.parse(version.definition) as Definition;
    if (definitions.size >= DEFINITION_CACHE_SIZE) definitions.delete(definitions.keys().next().value!);
    definitions.set(version.id, parsed);
    return parsed;
  }

  async function getRow(executor: Db, principal: Principal, id: string): Promise<AutomationsTable> {
    const row = await store.find(executor, scopeOf(principal), id);
    if (!row) throw notFound('automation');
    return row;
  }

  async function lockRow(trx: Trx, principal: Principal, id: string): Promise<AutomationsTable> {
    const row = await store.lock(trx, scopeOf(principal), id);
    if (!row) throw notFound('automation');
    return row;
  }

  /** Where an automation runs: the connection named (or the connection key's), its mode, else the key's mode or the one asked for. */
  async function placementOf(trx: Trx, principal: Principal, input: CreateAutomationInput): Promise<{ connectionId: string | null; mode: Mode }> {
    const connectionId = input.connection_id ?? principal.connectionId;
    if (connectionId) {
      const connection = await connections.getForReference(trx, principal, connectionId, '/connection_id');
      if (connection.status === 'disconnected') {
        throw new AppError('connection_inactive', `Connection ${connectionId} was disconnected: an automation cannot run on it.`, { param: '/connection_id' });
      }
      const mode = connection.test ? 'test' : 'live';
      if (input.mode !== undefined && input.mode !== mode) throw invalidParam('/mode', `must be the connection's mode (${mode}), or left out`);
      return { connectionId, mode };
    }
    if (principal.mode !== null && input.mode !== undefined && input.mode !== principal.mode) {
      throw invalidParam('/mode', `must be the key's own mode (${principal.mode}), or left out: an API key's automations have its mode`);
    }
    return { connectionId: null, mode: principal.mode ?? input.mode ?? 'live' };
  }

  async function blockersOf(executor: Db, row: AutomationsTable, definition: Definition): Promise<Blockers> {
    const used = templatesUsed(definition, '/definition');
    const approved = await templates.approvedAmong(
      executor,
      { organizationId: row.organization_id, connectionId: row.connection_id, test: row.mode === 'test' },
      used,
    );
    const where = row.connection_id === null ? `on any ${row.mode} connection of the organization` : `on connection ${row.connection_id}`;
    const unapproved = used
      .filter((template) => !approved.some((each) => each.name === template.name && each.language === template.language))
      .map((template) => ({
        // templatesUsed answers the send_template step's pointer; the template's name is its `template` field.
        param: `${template.pointer}/template`,
        code: 'template_not_approved',
        message: `template ${template.name} (${template.language}) is not approved ${where}`,
      }));
    return { templates: unapproved, ungated: await ungatedRiskySteps(row, definition, approved) };
  }

  /**
   * With the organization's `require_approval_for_risky_actions` on, a live automation may send a
   * marketing template or call a connector only as the `action_step` of a `request_approval`: a
   * person sees the rendered action before it happens. Answers the steps that do it otherwise.
   */
  async function ungatedRiskySteps(
    row: AutomationsTable,
    definition: Definition,
    approved: readonly { name: string; language: string; category: string | null }[],
  ): Promise<ErrorDetail[]> {
    if (row.mode !== 'live' || !(await organizations.get(row.organization_id)).settings.require_approval_for_risky_actions) return [];
    const gated = new Set(definition.steps.flatMap((step) => (step.type === 'request_approval' ? [step.action_step] : [])));
    const marketing = (step: { template: string; language: string }) =>
      approved.some((each) => each.name === step.template && each.language === step.language && each.category === 'marketing');
    return definition.steps.flatMap((step, index) => {
      const risky = step.type === 'http_request' ? 'calls a connector' : step.type === 'send_template' && marketing(step) ? 'sends a marketing template' : null;
      if (risky === null || gated.has(step.id)) return [];
      return [
        {
          param: `/definition/steps/${index}`,
          code: 'approval_required',
          message: `step ${step.id} ${risky}: the organization requires such steps to be the action_step of a request_approval step`,
        },
      ];
    });
  }

  /** Writes version N+1 of a locked automation and prunes the oldest beyond what is kept; answers both rows as they now are. */
  async function addVersion(
    trx: Trx,
    principal: Principal,
    row: AutomationsTable,
    definition: Definition,
    message: string | null,
  ): Promise<{ row: AutomationsTable; version: AutomationVersionsTable }> {
    const now = clock.now();
    const blockers = await blockersOf(trx, row, definition);
    const version: AutomationVersionsTable = {
      id: newId('automationVersion', now.getTime()),
      organization_id: row.organization_id,
      automation_id: row.id,
      number: row.latest_version + 1,
      definition: JSON.stringify(definition),
      message,
      created_by: authorOf(principal),
      warnings: JSON.stringify([...blockers.templates, ...blockers.ungated].map((blocker) => `${blocker.param}: ${blocker.message}`)),
      created_at: now.toISOString(),
    };
    await store.insertVersion(trx, version);
    const changes = { latest_version: version.number, updated_at: now.toISOString() } satisfies AutomationChanges;
    const after = { ...row, ...changes };
    await store.update(trx, row.id, changes);
    await prune(trx, after);
    return { row: after, version };
  }

  async function prune(trx: Trx, row: AutomationsTable): Promise<void> {
    const numbers = await store.versionNumbers(trx, row.id);
    if (numbers.length <= MAX_VERSIONS_KEPT) return;
    const kept = new Set([row.deployed_version, row.previous_deployed_version, row.latest_version, ...(await inFlight().versionsInUse(trx, row.id))]);
    const doomed = numbers.filter((number) => !kept.has(number)).slice(0, numbers.length - MAX_VERSIONS_KEPT);
    await store.deleteVersions(trx, row.id, doomed);
  }

  /**
   * Refuses a version that cannot run: a disconnected connection (`connection_inactive`), a template not approved (`template_not_approved`), a
   * connector account that is not active or of another mode or connection (`invalid_state`, `resource_not_found`).
   * `param` is the request's field that named the version; `details` point into the version.
   */
  async function assertDeployable(trx: Trx, principal: Principal, row: AutomationsTable, number: number, definition: Definition, param: string | null) {
    const blockers = await blockersOf(trx, row, definition);
    const refuse = (code: 'template_not_approved' | 'invalid_state', found: ErrorDetail[]) => {
      const more = found.length > 1 ? ` (and ${found.length - 1} more in details)` : '';
      return new AppError(code, `Version ${number} cannot be deployed: ${found[0]!.param}: ${found[0]!.message}${more}.`, { param, details: details(found) });
    };
    if (row.connection_id !== null) {
      const connection = await connections.getForReference(trx, principal, row.connection_id, '/connection_id');
      if (connection.status === 'disconnected') {
        throw new AppError('connection_inactive', `The automation's connection ${row.connection_id} was disconnected: nothing can be deployed on it.`, {
          param: '/connection_id',
        });
      }
    }
    if (blockers.templates.length > 0) throw refuse('template_not_approved', blockers.templates);
    if (blockers.ungated.length > 0) throw refuse('invalid_state', blockers.ungated);
    // Each account the version calls through must be active, of the automation's mode and connection.
    for (const [index, step] of definition.steps.entries()) {
      if (step.type !== 'http_request') continue;
      const user = { organizationId: row.organization_id, mode: row.mode, connectionId: row.connection_id };
      await connectors.assertUsableForDeploy(trx, user, step.connector_account_id, `/definition/steps/${index}/connector_account_id`);
    }
  }

  /** Deploys version `number` of a locked automation and settles its runs in flight, in one transaction. */
  async function deployIn(
    trx: Trx,
    actor: Actor,
    row: AutomationsTable,
    number: number,
    policy: InFlightPolicy,
    param: string | null,
    action: 'automation.deployed' | 'automation.rolled_back',
  ): Promise<Deployment> {
    const settler = inFlight();
    const version = await store.findVersion(trx, row.id, number);
    if (!version) {
      throw new AppError(
        'resource_not_found',
        `Automation ${row.id} has no version ${number}: ${number > row.latest_version ? `the latest is ${row.latest_version}` : 'it was pruned'}.`,
        { param },
      );
    }
    const definition = definitionOf(version);
    await assertDeployable(trx, actor.principal, row, number, definition, param);
    const changes = {
      deployed_version: number,
      // Deploying the deployed version again keeps what a rollback would go back to.
      previous_deployed_version: row.deployed_version === number ? row.previous_deployed_version : row.deployed_version,
      trigger_type: definition.trigger.type,
      trigger_event: definition.trigger.event ?? null,
      consecutive_failures: 0,
      updated_at: clock.now().toISOString(),
    } satisfies AutomationChanges;
    await store.update(trx, row.id, changes);
    const counts = await settler.settle(trx, {
      organizationId: row.organization_id,
      automationId: row.id,
      cause: 'deploy',
      policy,
      toVersion: number,
      definition,
    });
    await audit.record(trx, actor, {
      action,
      target: { type: 'automation', id: row.id },
      data: { version: number, previous_version: row.deployed_version, in_flight: { policy, ...counts } },
    });
    return { object: 'automation_deployment', automation: toAutomation({ ...row, ...changes }), version: number, in_flight: counts };
  }

  /** Counts one more failed live run; the 10th in a row disables the automation and tells its owners. */
  async function countFailure(trx: Trx, row: AutomationsTable): Promise<void> {
    const now = clock.now().toISOString();
    const failures = row.consecutive_failures + 1;
    if (failures < FAILURES_BEFORE_DISABLE || row.status !== 'enabled') {
      await store.update(trx, row.id, { consecutive_failures: failures, updated_at: now });
      return;
    }
    const changes = {
      consecutive_failures: failures,
      status: 'disabled',
      disabled_reason: 'consecutive_failures',
      updated_at: now,
    } satisfies AutomationChanges;
    const after = { ...row, ...changes };
    await store.update(trx, row.id, changes);
    await events.emit(trx, {
      type: 'automation.auto_disabled',
      organizationId: row.organization_id,
      connectionId: row.connection_id,
      object: toAutomation(after),
    });
    await audit.record(
      trx,
      { system: true, organizationId: row.organization_id },
      {
        action: 'automation.auto_disabled',
        target: { type: 'automation', id: row.id },
        data: { consecutive_failures: failures, version: row.deployed_version },
      },
    );
    await mail.notifyOwners(trx, row.organization_id, {
      subject: `Automation "${row.name}" was disabled`,
      text:
        `${failures} live runs of the automation "${row.name}" (${row.id}, version ${row.deployed_version}) failed or timed out in a row, ` +
        'so it was disabled and starts no new runs. Runs already in flight continue.\n\n' +
        `Look at its failed runs (GET /v1/runs?automation_id=${row.id}), deploy a fixed version if needed, then enable it again (POST /v1/automations/${row.id}/enable).`,
    });
  }

  /** The enabled automations a trigger may start, read from the store (`deployedForTrigger` remembers them for a second). */
  async function readDeployed(executor: Db, organizationId: string, trigger: { type: string; event?: string }): Promise<DeployedAutomation[]> {
    const rows = await store.deployedFor(executor, organizationId, { type: trigger.type, event: trigger.event ?? null });
    // Only the definitions not cached are read. An organization has at most 100 enabled automations,
    // fewer than the cache holds, so what was cached before this call stays cached through it.
    const texts = await store.definitionsOf(
      executor,
      rows.filter((row) => !definitions.has(row.version_id)).map((row) => row.version_id),
    );
    return rows.map((row) => ({
      automationId: row.id,
      organizationId: row.organization_id,
      mode: row.mode as Mode,
      connectionId: row.connection_id,
      version: row.deployed_version!,
      definition: definitionOf({ id: row.version_id, definition: texts.get(row.version_id)! }),
    }));
  }

  const forRuns: AutomationsForRuns = {
    async deployedForTrigger(executor, organizationId, trigger): Promise<DeployedAutomation[]> {
      return triggers.read(
        `${organizationId}:${trigger.type}:${trigger.event ?? ''}`,
        () => readDeployed(executor, organizationId, trigger),
        () => [TRIGGERS_TAG],
      );
    },
    async versionForRun(executor, organizationId, automationId, version) {
      const row = await store.findOfOrganization(executor, organizationId, automationId);
      const number = version ?? row?.deployed_version;
      if (!row || number === undefined || number === null) return undefined;
      const found = await store.findVersion(executor, automationId, number);
      if (!found) return undefined;
      return {
        automationId,
        organizationId,
        mode: row.mode as Mode,
        connectionId: row.connection_id,
        version: number,
        definition: definitionOf(found),
        status: row.status,
      };
    },

    async recordRunEnded(trx, organizationId, automationId, ending): Promise<void> {
      // Most runs succeed: no lock on the automation's row for them, which every run of it would wait on.
      if (ending === 'succeeded') return store.resetFailures(trx, organizationId, automationId, clock.now().toISOString());
      const row = await store.lockOfOrganization(trx, organizationId, automationId);
      if (row) await countFailure(trx, row);
    },
  };

  return {
    ...forRuns,

    /** Called once by the runs module when it is built: deploys, disables, deletes and prunes need it. */
    attachRuns(inFlightRuns: InFlightRuns): void {
      runs = inFlightRuns;
    },

    async create(actor: Actor, input: CreateAutomationInput): Promise<Automation> {
      const { principal } = actor;
      if (input.message !== undefined && input.definition === undefined) throw invalidParam('/message', 'describes a definition: send one with it');
      if (input.definition) checkVersion(input.definition);
      return db.transaction().execute(async (trx) => {
        const { connectionId, mode } = await placementOf(trx, principal, input);
        const now = clock.now().toISOString();
        let row: AutomationsTable = {
          id: newId('automation', clock.now().getTime()),
          organization_id: principal.organizationId,
          mode,
          connection_id: connectionId,
          name: input.name,
          description: input.description ?? null,
          status: 'draft',
          disabled_reason: null,
          trigger_type: null,
          trigger_event: null,
          deployed_version: null,
          previous_deployed_version: null,
          latest_version: 0,
          consecutive_failures: 0,
          metadata: JSON.stringify(input.metadata ?? {}),
          created_at: now,
          updated_at: now,
          deleted_at: null,
        };
        await store.insert(trx, row);
        if (input.definition) ({ row } = await addVersion(trx, principal, row, input.definition, input.message ?? null));
        await audit.record(trx, actor, {
          action: 'automation.created',
          target: { type: 'automation', id: row.id },
          data: { name: row.name, mode, connection_id: connectionId, latest_version: row.latest_version },
        });
        return toAutomation(row);
      });
    },

    async get(principal: Principal, id: string): Promise<Automation> {
      return toAutomation(await getRow(db, principal, id));
    },

    async list(
      principal: Principal,
      filters: { status?: AutomationStatus | undefined; connectionId?: string | undefined },
      page: PageRequest,
    ): Promise<Page<Automation>> {
      return mapPage(await store.list(db, scopeOf(principal), filters, page), toAutomation);
    },

    /** Changes the name, description or metadata (merged); a request that changes nothing writes nothing. */
    async update(actor: Actor, id: string, input: UpdateAutomationInput): Promise<Automation> {
      return db.transaction().execute(async (trx) => {
        const row = await lockRow(trx, actor.principal, id);
        const fields = {
          name: input.name ?? row.name,
          description: input.description === undefined ? row.description : input.description,
          metadata: mergeMetadata(row.metadata, input.metadata),
        } satisfies AutomationChanges;
        const changed = (Object.keys(fields) as (keyof typeof fields)[]).filter((field) => fields[field] !== row[field]);
        if (changed.length === 0) return toAutomation(row);
        const changes = { ...fields, updated_at: clock.now().toISOString() };
        await store.update(trx, id, changes);
        await audit.record(trx, actor, { action: 'automation.updated', target: { type: 'automation', id }, data: { fields: changed } });
        return toAutomation({ ...row, ...changes });
      });
    },

    /**
     * Deletes softly (its runs keep pointing at it; every read answers 404). Refused while runs are
     * active, unless `cancelRuns`, which cancels them in the same transaction.
     */
    async delete(actor: Actor, id: string, options: { cancelRuns: boolean }): Promise<{ id: string; object: 'automation'; deleted: true }> {
      const settler = inFlight();
      return db.transaction().execute(async (trx) => {
        const row = await lockRow(trx, actor.principal, id);
        const active = await settler.countActive(trx, row.organization_id, id);
        if (active > 0 && !options.cancelRuns) {
          throw new AppError(
            'invalid_state',
            `The automation has ${active} active run${active === 1 ? '' : 's'}: wait for ${active === 1 ? 'it' : 'them'} to finish, or delete with ?cancel_runs=true to cancel ${active === 1 ? 'it' : 'them'}.`,
            { param: '/query/cancel_runs' },
          );
        }
        const counts =
          active > 0
            ? await settler.settle(trx, {
                organizationId: row.organization_id,
                automationId: id,
                cause: 'delete',
                policy: 'cancel',
                toVersion: null,
                definition: null,
              })
            : null;
        const now = clock.now().toISOString();
        await store.update(trx, id, { deleted_at: now, updated_at: now });
        await audit.record(trx, actor, {
          action: 'automation.deleted',
          target: { type: 'automation', id },
          data: { status: row.status, canceled_runs: counts?.canceled ?? 0 },
        });
        return { id, object: 'automation' as const, deleted: true as const };
      });
    },

    /** Writes the next version, refused when `based_on_version` is not the latest (another writer came first). */
    async createVersion(actor: Actor, id: string, input: CreateVersionInput): Promise<AutomationVersion> {
      checkVersion(input.definition);
      return db.transaction().execute(async (trx) => {
        const row = await lockRow(trx, actor.principal, id);
        if (input.based_on_version !== row.latest_version) {
          throw new AppError(
            'invalid_state',
            `based_on_version ${input.based_on_version} is not the latest version: version ${row.latest_version} is. ` +
              `Read version ${row.latest_version}, apply your change to it, and send based_on_version ${row.latest_version}.`,
            { param: '/based_on_version', extra: { latest_version: row.latest_version } },
          );
        }
        const { version } = await addVersion(trx, actor.principal, row, input.definition, input.message ?? null);
        await audit.record(trx, actor, {
          action: 'automation.version_created',
          target: { type: 'automation', id },
          data: { version: version.number, warnings: (JSON.parse(version.warnings) as string[]).length },
        });
        return toVersion(version);
      });
    },

    async getVersion(principal: Principal, id: string, number: number): Promise<AutomationVersion> {
      await getRow(db, principal, id);
      const version = await store.findVersion(db, id, number);
      if (!version) throw notFound('automation version');
      return toVersion(version);
    },

    /** The automation's versions, newest first by default. */
    async listVersions(principal: Principal, id: string, page: PageRequest): Promise<Page<AutomationVersion>> {
      await getRow(db, principal, id);
      return mapPage(await store.listVersions(db, id, page), toVersion);
    },

    /** Makes `version` the one new runs start on, resets the failure count, and settles runs in flight by `in_flight`. */
    async deploy(actor: Actor, id: string, input: DeployInput): Promise<Deployment> {
      inFlight();
      return db
        .transaction()
        .execute(async (trx) =>
          deployIn(trx, actor, await lockRow(trx, actor.principal, id), input.version, input.in_flight ?? 'keep', '/version', 'automation.deployed'),
        );
    },

    /** Deploys the previously deployed version again (which then becomes the previous one). */
    async rollback(actor: Actor, id: string, input: RollbackInput): Promise<Deployment> {
      inFlight();
      return db.transaction().execute(async (trx) => {
        const row = await lockRow(trx, actor.principal, id);
        if (row.previous_deployed_version === null) {
          throw new AppError('invalid_state', 'The automation has no previously deployed version to roll back to: deploy a version instead.');
        }
        return deployIn(trx, actor, row, row.previous_deployed_version, input.in_flight ?? 'keep', null, 'automation.rolled_back');
      });
    },

    /** Lets the deployed version start runs; clears the failure count. Enabling an enabled automation changes nothing. */
    async enable(actor: Actor, id: string): Promise<Automation> {
      return db.transaction().execute(async (trx) => {
        const row = await lockRow(trx, actor.principal, id);
        if (row.deployed_version === null) {
          throw new AppError('invalid_state', `The automation has no deployed version: deploy one first (POST /v1/automations/${id}/deploy).`);
        }
        if (row.status === 'enabled') return toAutomation(row);
        // Counted in the writing transaction; two enables racing at 99 on PostgreSQL may both pass: the
        // limit guards against runaway scripts, not a quota that must hold to the unit.
        if ((await store.countEnabled(trx, row.organization_id)) >= MAX_ENABLED_AUTOMATIONS) {
          throw new AppError(
            'resource_limit_reached',
            `The organization has ${MAX_ENABLED_AUTOMATIONS} enabled automations, the most it may have: disable or delete one it no longer needs first.`,
          );
        }
        const changes = {
          status: 'enabled',
          disabled_reason: null,
          consecutive_failures: 0,
          updated_at: clock.now().toISOString(),
        } satisfies AutomationChanges;
        await store.update(trx, id, changes);
        await audit.record(trx, actor, { action: 'automation.enabled', target: { type: 'automation', id }, data: { version: row.deployed_version } });
        return toAutomation({ ...row, ...changes });
      });
    },

    /** Stops new runs (`disabled_reason: user`); runs in flight are kept or canceled by `in_flight`. */
    async disable(actor: Actor, id: string, input: DisableInput): Promise<Automation> {
      const settler = inFlight();
      const policy = input.in_flight ?? 'keep';
      return db.transaction().execute(async (trx) => {
        const row = await lockRow(trx, actor.principal, id);
        const changes = { status: 'disabled', disabled_reason: 'user', updated_at: clock.now().toISOString() } satisfies AutomationChanges;
        await store.update(trx, id, changes);
        const counts = await settler.settle(trx, {
          organizationId: row.organization_id,
          automationId: id,
          cause: 'disable',
          policy,
          toVersion: null,
          definition: null,
        });
        await audit.record(trx, actor, {
          action: 'automation.disabled',
          target: { type: 'automation', id },
          data: { previous_status: row.status, in_flight: { policy, ...counts } },
        });
        return toAutomation({ ...row, ...changes });
      });
    },
  };
}

export type AutomationsService = ReturnType<typeof createAutomationsService>;
