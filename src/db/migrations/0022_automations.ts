import { sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Automations, their immutable versions, runs and each run's event log (docs/automations.md).
 *
 * - An automation is deleted softly (`deleted_at`): its runs keep pointing at it.
 * - `trigger_type` and `trigger_event` copy the deployed version's trigger, so that an inbound
 *   message finds the automations it may start with one indexed read.
 * - A conversation has at most one active live run: the partial unique index is what makes two
 *   triggers racing for one conversation start one run, not two.
 * - `trigger_key` (the automation and the message, event or occurrence that started the run) makes a
 *   trigger processed twice start its run once.
 * - `seq` is the run's compare-and-set counter: every step job carries the `seq` it was queued for,
 *   and one that finds another does nothing.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('automations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('connection_id', 'text')
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('disabled_reason', 'text')
    .addColumn('trigger_type', 'text')
    .addColumn('trigger_event', 'text')
    .addColumn('deployed_version', 'integer')
    .addColumn('previous_deployed_version', 'integer')
    .addColumn('latest_version', 'integer', (c) => c.notNull())
    .addColumn('consecutive_failures', 'integer', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema
    .createIndex('automations_organization')
    .on('automations')
    .columns(['organization_id', 'id'])
    .where(sql<boolean>`deleted_at is null`)
    .execute();
  await db.schema
    .createIndex('automations_trigger')
    .on('automations')
    .columns(['organization_id', 'trigger_type', 'trigger_event'])
    .where(sql<boolean>`status = 'enabled' and deleted_at is null`)
    .execute();

  await db.schema
    .createTable('automation_versions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('automation_id', 'text', (c) => c.notNull().references('automations.id'))
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('definition', 'text', (c) => c.notNull())
    .addColumn('message', 'text')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('warnings', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('automation_versions_number').on('automation_versions').columns(['automation_id', 'number']).unique().execute();

  await db.schema
    .createTable('runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('automation_id', 'text', (c) => c.notNull().references('automations.id'))
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('dry_run', 'integer', (c) => c.notNull())
    .addColumn('connection_id', 'text')
    .addColumn('conversation_id', 'text')
    .addColumn('contact_id', 'text')
    .addColumn('trigger', 'text', (c) => c.notNull())
    .addColumn('trigger_key', 'text')
    .addColumn('depth', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('current_step_id', 'text')
    .addColumn('step_started_at', 'text')
    .addColumn('waiting_for', 'text')
    .addColumn('last_message', 'text')
    .addColumn('early_reply', 'text')
    .addColumn('input', 'text', (c) => c.notNull())
    .addColumn('variables', 'text', (c) => c.notNull())
    .addColumn('visits', 'text', (c) => c.notNull())
    .addColumn('outcome', 'text')
    .addColumn('error', 'text')
    .addColumn('steps_executed', 'integer', (c) => c.notNull())
    .addColumn('event_count', 'integer', (c) => c.notNull())
    .addColumn('replay_of', 'text')
    .addColumn('triggered_by', 'text')
    .addColumn('timeout_at', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('finished_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('runs_organization').on('runs').columns(['organization_id', 'id']).execute();
  await db.schema.createIndex('runs_automation').on('runs').columns(['automation_id', 'status']).execute();
  await db.schema
    .createIndex('runs_active_conversation')
    .on('runs')
    .column('conversation_id')
    .unique()
    .where(sql<boolean>`status in ('queued', 'running', 'waiting', 'paused') and dry_run = 0 and conversation_id is not null`)
    .execute();
  await db.schema.createIndex('runs_trigger_key').on('runs').columns(['automation_id', 'trigger_key']).unique().execute();

  await db.schema
    .createTable('run_events')
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('step_id', 'text')
    // Set on the entries of automated messages: the runtime guard counts them per contact.
    .addColumn('contact_id', 'text')
    .addColumn('at', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_events_pk', ['run_id', 'seq'])
    .execute();
  await db.schema
    .createIndex('run_events_contact')
    .on('run_events')
    .columns(['contact_id', 'at'])
    .where(sql<boolean>`contact_id is not null`)
    .execute();
  await db.schema.createIndex('run_events_at').on('run_events').column('at').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('run_events').execute();
  await db.schema.dropTable('runs').execute();
  await db.schema.dropTable('automation_versions').execute();
  await db.schema.dropTable('automations').execute();
}
