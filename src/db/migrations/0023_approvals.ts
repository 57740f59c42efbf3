import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Approvals (docs/automations.md#approvals): a run's `request_approval` step asks people to decide
 * before its action runs.
 *
 * - `plan` is the action step's plan as it was rendered when the approval was requested (JSON); an
 *   approval runs exactly that, never a re-render. `action` is what the API shows of it.
 * - `run_seq` is the run's compare-and-set counter while it waits on the approval: a decision moves
 *   the run only if it is still waiting at that `seq`.
 * - `triggered_by` and `triggered_by_member_id` copy who started the run through the API: neither may
 *   decide its approvals.
 * - `runs.approved_action` holds the frozen plan from the approval until its action step has run, so
 *   that a run paused at the action step (control lost) still runs the snapshot when it resumes.
 * - `runs.triggered_by_member_id`: the member behind a dashboard session that started a run.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('approvals')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('connection_id', 'text')
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id'))
    .addColumn('run_seq', 'integer', (c) => c.notNull())
    .addColumn('automation_id', 'text', (c) => c.notNull())
    .addColumn('step_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('summary', 'text')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('plan', 'text', (c) => c.notNull())
    .addColumn('approvers', 'text', (c) => c.notNull())
    .addColumn('triggered_by', 'text')
    .addColumn('triggered_by_member_id', 'text')
    .addColumn('requested_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('decided_at', 'text')
    .addColumn('decided_by_member_id', 'text')
    .addColumn('decided_by_key_id', 'text')
    .addColumn('comment', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('approvals_organization').on('approvals').columns(['organization_id', 'id']).execute();
  await db.schema.createIndex('approvals_run').on('approvals').columns(['run_id', 'status']).execute();
  await db.schema.alterTable('runs').addColumn('approved_action', 'text').execute();
  await db.schema.alterTable('runs').addColumn('triggered_by_member_id', 'text').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('runs').dropColumn('triggered_by_member_id').execute();
  await db.schema.alterTable('runs').dropColumn('approved_action').execute();
  await db.schema.dropTable('approvals').execute();
}
