import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * An organization's settings, one column each. `require_approval_for_risky_actions` (0/1): live
 * automations may send marketing templates or call connectors only as the action of an approval
 * (docs/automations.md#risky-actions).
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable('organizations')
    .addColumn('require_approval_for_risky_actions', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('organizations').dropColumn('require_approval_for_risky_actions').execute();
}
