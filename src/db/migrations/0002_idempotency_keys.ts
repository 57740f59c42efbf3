import type { Kysely } from 'kysely';

// Typed against `Kysely<any>` for the same reason as 0001: a migration describes the schema of its time.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('idempotency_keys')
    // No foreign key: rows live 24 hours at most, and on PostgreSQL the check would take a share lock
    // on the organization's row for every POST that carries a key.
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('lock_token', 'text', (c) => c.notNull())
    .addColumn('locked_at', 'text', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('completed_at', 'text')
    .addColumn('expires_at', 'text', (c) => c.notNull())
    // The constraint is the lock: of N concurrent first requests with one key, exactly one insert wins.
    .addPrimaryKeyConstraint('idempotency_keys_pkey', ['organization_id', 'mode', 'key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_expires').on('idempotency_keys').column('expires_at').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('idempotency_keys').execute();
}
