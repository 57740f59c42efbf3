import { sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Schedules and their occurrences. A schedule is deleted softly (`deleted_at`): what its occurrences
 * created (notifications) keeps pointing at it. An occurrence is unique per (schedule, scheduled_for),
 * which is what makes a fire job that runs twice for one slot record it once.
 *
 * Numbered 0019: 0018 is the notifications' migration, written beside this one. Both are new tables
 * that do not refer to each other, so they apply in either order.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('schedules')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    // The target's sending number, when it has one: what a connection key or a test key may see.
    .addColumn('connection_id', 'text')
    .addColumn('name', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('paused_reason', 'text')
    .addColumn('timezone', 'text', (c) => c.notNull())
    .addColumn('recurrence', 'text', (c) => c.notNull())
    .addColumn('start_at', 'text', (c) => c.notNull())
    .addColumn('end_at', 'text')
    .addColumn('max_occurrences', 'integer')
    .addColumn('overlap_policy', 'text', (c) => c.notNull())
    .addColumn('catchup_window_seconds', 'integer', (c) => c.notNull())
    .addColumn('target', 'text', (c) => c.notNull())
    .addColumn('next_occurrence_at', 'text')
    .addColumn('last_occurrence_at', 'text')
    .addColumn('occurrence_count', 'integer', (c) => c.notNull())
    .addColumn('consecutive_failures', 'integer', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('revision', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema
    .createIndex('schedules_organization')
    .on('schedules')
    .columns(['organization_id', 'id'])
    .where(sql<boolean>`deleted_at is null`)
    .execute();
  // The limit of active schedules per organization is counted on every create and resume.
  await db.schema
    .createIndex('schedules_organization_status')
    .on('schedules')
    .columns(['organization_id', 'status'])
    .where(sql<boolean>`deleted_at is null`)
    .execute();

  await db.schema
    .createTable('schedule_occurrences')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('schedule_id', 'text', (c) => c.notNull().references('schedules.id'))
    .addColumn('scheduled_for', 'text', (c) => c.notNull())
    // In the schedule's time zone as it was when the occurrence came due (a later edit may change it).
    .addColumn('scheduled_for_local', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('fired_at', 'text')
    .addColumn('result', 'text')
    .addColumn('error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('schedule_occurrences_slot').on('schedule_occurrences').columns(['schedule_id', 'scheduled_for']).unique().execute();
  await db.schema.createIndex('schedule_occurrences_schedule').on('schedule_occurrences').columns(['schedule_id', 'id']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('schedule_occurrences').execute();
  await db.schema.dropTable('schedules').execute();
}
