import { sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Invites (`inv_`) and every mail of one (`invite_sends`).
 *
 * An invite holds only the SHA-256 of its current token (`token_hash`, unique: accepting looks the
 * invite up by it). `status` is stored as `pending`, `accepted` or `revoked`, and `expired` only for
 * an expired invite that a newer invite to the same email replaced; a pending invite past
 * `expires_at` is shown as expired without a write. The partial unique index on (organization_id,
 * email) of pending invites is what makes two invites to one email, created at the same moment, end
 * with one.
 *
 * `invite_sends` has a row per mail (creation and each resend), keyed by the hash of the token that
 * mail carried: the daily cap counts an organization's rows of the last 24 hours, and a token that a
 * resend replaced is recognised as such instead of as unknown.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('invites')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    // No foreign key: the inviter may leave the organization, the invite's history stays.
    .addColumn('invited_by_member_id', 'text', (c) => c.notNull())
    .addColumn('member_id', 'text')
    .addColumn('last_sent_at', 'text', (c) => c.notNull())
    .addColumn('accepted_at', 'text')
    .addColumn('revoked_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('invites_list').on('invites').columns(['organization_id', 'id']).execute();
  await db.schema.createIndex('invites_token').on('invites').column('token_hash').unique().execute();
  await db.schema
    .createIndex('invites_pending_email')
    .on('invites')
    .columns(['organization_id', 'email'])
    .unique()
    .where(sql<boolean>`status = 'pending'`)
    .execute();

  await db.schema
    .createTable('invite_sends')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('invite_id', 'text', (c) => c.notNull().references('invites.id'))
    .addColumn('sent_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('invite_sends_window').on('invite_sends').columns(['organization_id', 'sent_at']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('invite_sends').execute();
  await db.schema.dropTable('invites').execute();
}
