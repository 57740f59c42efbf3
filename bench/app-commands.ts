/**
 * What a bench may ask the service child (bench/serve-app.ts) to do besides serving HTTP, over the
 * IPC channel of bench/lib.ts: write rows straight into its store, emit webhook events, run the job
 * worker. These are things no client can do through the API (or not fast enough to set a bench up),
 * so they run inside the service's process, on its store and its services, and only when a bench
 * asks: a bench that sends no command measures exactly what src/main.ts would serve.
 */
import { sql } from 'kysely';
import { createApp, type App } from '../src/app.ts';
import { loadConfig } from '../src/config/config.ts';
import { openStore, type Db, type Store } from '../src/db/connect.ts';
import type { DialectName } from '../src/db/dialect.ts';
import type { AuditEventsTable, ContactsTable, ConversationsTable, MessagesTable } from '../src/db/schema.ts';
import { webhookDelivery } from '../src/jobs/catalog.ts';
import { createWorker, type Worker } from '../src/jobs/worker.ts';
import { systemClock } from '../src/lib/clock.ts';
import { ID_PREFIXES, newId } from '../src/lib/ids.ts';
import { ulid } from 'ulid';
import type { ChildCommands } from './lib.ts';

export interface SeedAuditEventsArgs {
  organizationId: string;
  /** The member the rows name as their actor. */
  memberId: string;
  count: number;
}

export interface SeedAuditEventsResult {
  rows: number;
  ms: number;
}

export interface StartWorkerArgs {
  /** Unset (both): the service's own worker, exactly as src/main.ts starts it. */
  concurrency?: number;
  pollMs?: number;
}

export interface EmitEventsArgs {
  organizationId: string;
  count: number;
  /** Unset: as fast as the store takes them, `concurrency` at a time. Set: open loop at this rate. */
  perSecond?: number;
  /** Emits in flight at once when there is no rate, as from that many requests; default 1. */
  concurrency?: number;
}

export interface EmitEventsResult {
  emitted: number;
  /** Epoch milliseconds of the first emit's start and the last one's commit. */
  startedAt: number;
  finishedAt: number;
}

export interface JobCounts {
  /** Jobs by status (queued, running, succeeded, failed). */
  jobs: Record<string, number>;
  deliveries: Record<string, number>;
}

export interface WaitForInboundArgs {
  /** Resolve once this many inbound messages (and as many `message.received` events) are stored; 0 reads once. */
  messages: number;
  timeoutMs: number;
  /** How often to count while waiting; default 50 ms. */
  pollMs?: number;
  /**
   * Also answer when the n-th `message.received` event (1-based, in created_at order) was stamped,
   * for each n: the time a given part of a batch was done, whenever the bench gets to ask.
   */
  receivedAtPositions?: number[];
  /** Also answer how many `message.received` events were stamped at or before each of these epoch milliseconds. */
  receivedBy?: number[];
}

/** What inbound provider webhooks have left in the store so far. */
export interface InboundCounts {
  /** Inbound messages stored. */
  messages: number;
  /** `message.received` events stored. */
  messageReceivedEvents: number;
  contacts: number;
  /** Provider webhooks stored, and how many of them the worker has processed. */
  providerWebhooks: number;
  providerWebhooksProcessed: number;
  /** Epoch milliseconds of the newest `message.received` event's created_at (set at emit); 0 if none. */
  lastMessageReceivedAt: number;
  /** Epoch milliseconds at which these counts were read. */
  at: number;
  timedOut: boolean;
  /** For each of `receivedAtPositions`: epoch milliseconds, or 0 when there is no such event yet. */
  receivedAt: number[];
  /** For each of `receivedBy`: a count. */
  receivedByCounts: number[];
}

export interface WaitForSendsArgs {
  phoneNumberId: string;
  /** Resolve once the sandbox provider has accepted this many messages from the number. */
  count: number;
  timeoutMs: number;
}

export interface SandboxSends {
  /** Every message the sandbox accepted from the number: the recipient and when (epoch milliseconds), in arrival order. */
  sends: { waId: string; at: number }[];
  timedOut: boolean;
}

export interface WaitForRunsArgs {
  /** Runs created at or after this (ISO 8601). */
  since: string;
  /** Resolve once this many of them have `status`. */
  status: string;
  count: number;
  timeoutMs: number;
}

export interface RunCounts {
  /** Runs created since, by status. */
  runs: Record<string, number>;
  /** Outbound messages created since, by status. */
  outbound: Record<string, number>;
  timedOut: boolean;
}

/** One executed step of a run: its `run.step` job and the step's entries in the run's event log, in epoch milliseconds. */
export interface StepTime {
  runId: string;
  stepId: string;
  /** The job's `run_at`: when the step became due (its job was queued in the previous step's transaction). */
  dueAt: number;
  /** The `at` of the step's `step.started` entry: stamped once the step's transaction holds the run. */
  loggedAt: number;
  /** The job's `updated_at` once it succeeded: its outcome committed by the worker. */
  settledAt: number;
}

export interface StepTimesArgs {
  /** Runs created at or after this (ISO 8601), and `message.send` jobs queued since. */
  since: string;
}

export interface StepTimes {
  steps: StepTime[];
  /** Runs whose succeeded step jobs and `step.started` entries did not pair up (a retried or stale job): left out of `steps`. */
  unpaired: number;
  /** The `message.send` jobs queued since: due and settled, epoch milliseconds. */
  sends: { dueAt: number; settledAt: number }[];
}

const ROWS_PER_TRANSACTION = 10_000;
// Rows per INSERT. Each statement binds a handful of values whatever its size (the varying columns
// travel as one array or JSON document), so it is bounded by memory, not by parameter limits.
const ROWS_PER_STATEMENT = 5_000;

/** A contact as its GET would return it: what a `contact.created` event carries, of a fixed size. */
export function contactObject(index: number, now: Date): Record<string, unknown> {
  return {
    id: newId('contact', now.getTime()),
    object: 'contact',
    phone_number: `+1555${String(index).padStart(7, '0')}`,
    name: `Bench Contact ${String(index).padStart(7, '0')}`,
    email: null,
    labels: ['bench'],
    opted_in: true,
    metadata: {},
    created_at: now.toISOString(),
    updated_at: now.toISOString(),
  };
}

/** The columns of a seeded audit row that differ from row to row; the rest are constants of the batch. */
type VaryingColumns = Pick<AuditEventsTable, 'id' | 'target_id' | 'request_id' | 'data' | 'created_at'>;

/** An audit row like the ones key creation writes, of a fixed size so every page has the same bytes. */
function varyingColumns(index: number): VaryingColumns {
  const now = Date.now();
  return {
    // Minted now, in order: ids sort by time, as the ones the service writes do.
    id: newId('auditEvent', now),
    target_id: newId('apiKey', now),
    request_id: newId('request', now),
    data: JSON.stringify({ name: `bench ${String(index).padStart(7, '0')}`, kind: 'organization', mode: 'live' }),
    created_at: new Date(now).toISOString(),
  };
}

/**
 * One INSERT of many rows. Kysely's multi-row `values()` binds every cell (12 a row) and spends
 * about 12 ms compiling each thousand rows, more than the store takes to write them; here the
 * varying columns go as five arrays (PostgreSQL, `unnest`) or one JSON document (SQLite,
 * `json_each`), and the constant ones once.
 */
async function insertAuditRows(
  db: Db,
  dialect: DialectName,
  organizationId: string,
  actor: { memberId: string; sessionId: string },
  rows: VaryingColumns[],
): Promise<void> {
  const constants = sql`${organizationId}, 'api_key.created', 'member', ${actor.memberId}, 'dashboard_token', ${actor.sessionId}, 'api_key'`;
  const into = sql`insert into audit_events (organization_id, action, actor_type, actor_id, credential_type, credential_id, target_type, id, target_id, request_id, data, created_at)`;
  if (dialect === 'postgres') {
    const column = (name: keyof VaryingColumns) => rows.map((row) => row[name]);
    await sql`${into} select ${constants}, r.* from unnest(
      ${column('id')}::text[], ${column('target_id')}::text[], ${column('request_id')}::text[], ${column('data')}::text[], ${column('created_at')}::text[]
    ) as r`.execute(db);
  } else {
    const json = JSON.stringify(rows.map((row) => [row.id, row.target_id, row.request_id, row.data, row.created_at]));
    await sql`${into} select ${constants}, r.value ->> 0, r.value ->> 1, r.value ->> 2, r.value ->> 3, r.value ->> 4 from json_each(${json}) as r`.execute(db);
  }
}

/** A table's rows by status. */
async function countByStatus(db: Db, table: 'jobs' | 'webhook_deliveries' | 'messages'): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom(table)
    .select(['status', sql<number>`count(*)`.as('count')])
    .groupBy('status')
    .execute();
  return Object.fromEntries(rows.map((row) => [row.status, Number(row.count)]));
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface SeedConversationsArgs {
  organizationId: string;
  connectionId: string;
  count: number;
}

export interface SeedConversationsResult {
  conversations: number;
  ms: number;
}

export interface SeedHistoryArgs {
  organizationId: string;
  /** The newest conversations (the first page) get the history. */
  conversations: number;
  messagesEach: number;
}

export interface CountQueriesArgs {
  /** A dashboard token. Its session and member are remembered for a second from the warm-up request, so each count is the page's own queries. */
  token: string;
  paths: string[];
}

// Rows per multi-row INSERT: the messages table's 20 columns make 20,000 bound values, under
// SQLite's 32,766 and PostgreSQL's 65,535.
const THREADS_PER_STATEMENT = 1_000;

/** One customer's thread as the service stores it after their first message: contact, conversation, message. */
function threadRows(args: SeedConversationsArgs, index: number): { contact: ContactsTable; conversation: ConversationsTable; message: MessagesTable } {
  const now = Date.now();
  const at = new Date(now).toISOString();
  const padded = String(index).padStart(7, '0');
  const owner = { organization_id: args.organizationId, created_at: at, updated_at: at, metadata: '{}' };
  const contactId = newId('contact', now);
  const conversationId = newId('conversation', now);
  return {
    contact: {
      ...owner,
      id: contactId,
      phone_number: `+1555${padded}`,
      name: `Bench Contact ${padded}`,
      email: null,
      profile_name: `Customer ${padded}`,
      last_inbound_at: at,
      marketing_consent: 'unknown',
      marketing_consent_since: null,
      marketing_consent_source: null,
      deleted_at: null,
    },
    conversation: {
      ...owner,
      id: conversationId,
      connection_id: args.connectionId,
      contact_id: contactId,
      state: 'open',
      assignee_id: null,
      control: 'api',
      tags: '[]',
      last_message_at: at,
      last_inbound_at: at,
      window_warning_for: null,
    },
    message: textMessage(
      { organizationId: args.organizationId, connectionId: args.connectionId, conversationId, contactId },
      {
        id: newId('message', now),
        inbound: true,
        status: 'received',
        body: `Hello, this is customer ${padded}.`,
        providerMessageId: `wamid.bench${padded}`,
        at,
      },
    ),
  };
}

/** A text message of a thread, stored as the service stores one. */
function textMessage(
  thread: { organizationId: string; connectionId: string; conversationId: string; contactId: string },
  message: { id: string; inbound: boolean; status: string; body: string; providerMessageId: string; at: string },
): MessagesTable {
  return {
    id: message.id,
    organization_id: thread.organizationId,
    connection_id: thread.connectionId,
    conversation_id: thread.conversationId,
    contact_id: thread.contactId,
    direction: message.inbound ? 'inbound' : 'outbound',
    type: 'text',
    content: JSON.stringify({ body: { body: message.body }, referral: null }),
    context: null,
    status: message.status,
    provider_message_id: message.providerMessageId,
    imported: 0,
    error: null,
    metadata: '{}',
    sent_at: message.at,
    send_request: null,
    echo: 0,
    created_at: message.at,
    updated_at: message.at,
  };
}

export function createAppCommands(app: App, store: Store): { commands: ChildCommands; stop(): Promise<void> } {
  const { db } = store;
  let worker: Worker | undefined;
  // A worker built here is not the one the queue wakes on enqueue; emitting wakes it instead.
  let wakeOwnWorker: (() => void) | undefined;

  // Committed as a write request's transaction is, which is where the service emits its events: on
  // SQLite it joins the requests' commit group (concurrent emits share a commit).
  async function emitOne(organizationId: string, index: number): Promise<void> {
    await store.commitWithRequests(() =>
      db
        .transaction()
        .execute((trx) =>
          app.services.events.emit(trx, { type: 'contact.created', organizationId, connectionId: null, object: contactObject(index, new Date()) }),
        ),
    );
    wakeOwnWorker?.();
  }

  const commands = {
    async seedAuditEvents(args: SeedAuditEventsArgs): Promise<SeedAuditEventsResult> {
      const started = performance.now();
      // A made-up session: nothing reads an audit row's credential back.
      const actor = { memberId: args.memberId, sessionId: newId('dashboardSession') };
      for (let done = 0; done < args.count;) {
        const inThisTransaction = Math.min(ROWS_PER_TRANSACTION, args.count - done);
        await db.transaction().execute(async (trx) => {
          for (let offset = 0; offset < inThisTransaction; offset += ROWS_PER_STATEMENT) {
            const rows: VaryingColumns[] = [];
            for (let i = offset; i < Math.min(offset + ROWS_PER_STATEMENT, inThisTransaction); i++) rows.push(varyingColumns(done + i));
            await insertAuditRows(trx, store.dialect.name, args.organizationId, actor, rows);
          }
        });
        done += inThisTransaction;
      }
      // Fresh statistics, as a long-lived database would have: PostgreSQL's planner otherwise sees an
      // empty table until autovacuum's next round, and SQLite's has none until ANALYZE.
      await sql`analyze`.execute(db);
      return { rows: args.count, ms: performance.now() - started };
    },

    /**
     * Sets a connection's ceiling to a figure the provider does not offer (its levels are 20, 80 and
     * 1,000 a second), for the notifications bench's 100.
     */
    async setThroughput(args: { connectionId: string; perSecond: number }): Promise<void> {
      await db.updateTable('connections').set({ throughput_per_second: args.perSecond }).where('id', '=', args.connectionId).execute();
    },

    /** When each outbound message reached the sandbox provider, epoch milliseconds in arrival order. */
    async sandboxArrivals(args: { phoneNumberId: string }): Promise<number[]> {
      return ((await app.sandbox?.state.sentBy(args.phoneNumberId)) ?? []).map((message) => message.createdAt.getTime()).sort((a, b) => a - b);
    },

    async startWorker(args: StartWorkerArgs): Promise<{ concurrency: number; pollMs: number | 'default' }> {
      if (worker) throw new Error('the worker is already running');
      if (args.concurrency === undefined && args.pollMs === undefined) {
        worker = app.worker;
      } else {
        // Same handler as the service registers (webhook-endpoints.job.ts), other options.
        const own = createWorker({
          db,
          commitWithRequests: store.commitWithRequests,
          clock: systemClock,
          log: app.server.log,
          catalog: [webhookDelivery],
          sharedQueue: store.dialect.sharedByProcesses,
          ...(args.concurrency === undefined ? {} : { concurrency: args.concurrency }),
          ...(args.pollMs === undefined ? {} : { pollMs: args.pollMs }),
        });
        own.register(webhookDelivery, (payload, context) => app.services.webhookEndpoints.deliver(payload, context));
        worker = own;
        wakeOwnWorker = () => own.wake();
      }
      worker.start();
      return { concurrency: worker.concurrency, pollMs: args.pollMs ?? 'default' };
    },

    /** Stops the worker started by `startWorker`, letting its jobs in flight finish. */
    async stopWorker(): Promise<void> {
      await worker?.stop(2_000);
      worker = undefined;
      wakeOwnWorker = undefined;
    },

    async emitEvents(args: EmitEventsArgs): Promise<EmitEventsResult> {
      const startedAt = Date.now();
      if (args.perSecond === undefined) {
        let next = 0;
        await Promise.all(
          Array.from({ length: args.concurrency ?? 1 }, async () => {
            while (next < args.count) {
              const index = next++;
              await emitOne(args.organizationId, index);
            }
          }),
        );
      } else {
        // Open loop: each event is due at its slot whatever the previous ones are still doing, so a
        // slow store shows up as latency, not as a lower rate. Due slots are served every 10 ms: a
        // timer per event (one every 2 ms at 500 a second) would cost more than the evenness is worth.
        const pending: Promise<void>[] = [];
        const intervalMs = 1000 / args.perSecond;
        let next = 0;
        while (next < args.count) {
          const due = Math.min(args.count, Math.floor((Date.now() - startedAt) / intervalMs) + 1);
          for (; next < due; next++) pending.push(emitOne(args.organizationId, next));
          if (next < args.count) await sleep(10);
        }
        await Promise.all(pending);
      }
      return { emitted: args.count, startedAt, finishedAt: Date.now() };
    },

    async waitForInbound(args: WaitForInboundArgs): Promise<InboundCounts> {
      const deadline = Date.now() + args.timeoutMs;
      const count = async () => {
        const [messages, events] = await Promise.all([
          db
            .selectFrom('messages')
            .select(sql<number>`count(*)`.as('count'))
            .where('direction', '=', 'inbound')
            .executeTakeFirstOrThrow(),
          db
            .selectFrom('events')
            .select(sql<number>`count(*)`.as('count'))
            .where('type', '=', 'message.received')
            .executeTakeFirstOrThrow(),
        ]);
        return { messages: Number(messages.count), events: Number(events.count) };
      };
      let counted = await count();
      while ((counted.messages < args.messages || counted.events < args.messages) && Date.now() < deadline) {
        await sleep(args.pollMs ?? 50);
        counted = await count();
      }
      const at = Date.now();
      const [contacts, webhooks, last] = await Promise.all([
        db
          .selectFrom('contacts')
          .select(sql<number>`count(*)`.as('count'))
          .executeTakeFirstOrThrow(),
        db
          .selectFrom('provider_webhooks')
          .select([sql<number>`count(*)`.as('count'), sql<number>`count(processed_at)`.as('processed')])
          .executeTakeFirstOrThrow(),
        db
          .selectFrom('events')
          .select(sql<string | null>`max(created_at)`.as('created_at'))
          .where('type', '=', 'message.received')
          .executeTakeFirstOrThrow(),
      ]);
      const receivedAt: number[] = [];
      for (const position of args.receivedAtPositions ?? []) {
        const row = await db
          .selectFrom('events')
          .select('created_at')
          .where('type', '=', 'message.received')
          .orderBy('created_at')
          .orderBy('id')
          .offset(position - 1)
          .limit(1)
          .executeTakeFirst();
        receivedAt.push(row ? Date.parse(row.created_at) : 0);
      }
      const receivedByCounts: number[] = [];
      for (const epochMs of args.receivedBy ?? []) {
        const row = await db
          .selectFrom('events')
          .select(sql<number>`count(*)`.as('count'))
          .where('type', '=', 'message.received')
          .where('created_at', '<=', new Date(epochMs).toISOString())
          .executeTakeFirstOrThrow();
        receivedByCounts.push(Number(row.count));
      }
      return {
        receivedAt,
        receivedByCounts,
        messages: counted.messages,
        messageReceivedEvents: counted.events,
        contacts: Number(contacts.count),
        providerWebhooks: Number(webhooks.count),
        providerWebhooksProcessed: Number(webhooks.processed),
        lastMessageReceivedAt: last.created_at ? Date.parse(last.created_at) : 0,
        at,
        timedOut: counted.messages < args.messages || counted.events < args.messages,
      };
    },

    /**
     * What the provider would know of customers who wrote in: their 24-hour windows open in the
     * sandbox, for webhooks the bench POSTs itself rather than through the sandbox's control API.
     */
    async openSandboxWindows(args: { phoneNumberId: string; waIds: string[] }): Promise<void> {
      const sandbox = app.sandbox;
      if (!sandbox) throw new Error('the service is not in sandbox mode');
      for (const waId of args.waIds) await sandbox.state.recordInbound(sandbox.state.draftMessage('inbound', args.phoneNumberId, waId, 'text'));
    },

    /** Waits until the sandbox has accepted `count` messages from the number (one indexed count per poll). */
    async waitForSends(args: WaitForSendsArgs): Promise<SandboxSends> {
      const sandbox = app.sandbox;
      if (!sandbox) throw new Error('the service is not in sandbox mode');
      const deadline = Date.now() + args.timeoutMs;
      while ((await sandbox.state.sentCount(args.phoneNumberId)) < args.count && Date.now() < deadline) await sleep(20);
      const sent = await sandbox.state.sentBy(args.phoneNumberId);
      const sends = sent.map((message) => ({ waId: message.waId, at: message.createdAt.getTime() })).sort((a, b) => a.at - b.at);
      return { sends, timedOut: sent.length < args.count };
    },

    async waitForRuns(args: WaitForRunsArgs): Promise<RunCounts> {
      const deadline = Date.now() + args.timeoutMs;
      const byStatus = async (table: 'runs' | 'messages') => {
        let query = db
          .selectFrom(table)
          .select(['status', sql<number>`count(*)`.as('count')])
          .where('created_at', '>=', args.since);
        if (table === 'messages') query = query.where('direction', '=', 'outbound');
        const rows = await query.groupBy('status').execute();
        return Object.fromEntries(rows.map((row) => [row.status, Number(row.count)]));
      };
      let runs = await byStatus('runs');
      while ((runs[args.status] ?? 0) < args.count && Date.now() < deadline) {
        await sleep(50);
        runs = await byStatus('runs');
      }
      return { runs, outbound: await byStatus('messages'), timedOut: (runs[args.status] ?? 0) < args.count };
    },

    /**
     * Every step executed by the runs created since: each succeeded `run.step` job paired with the
     * `step.started` entry it wrote (the n-th succeeded job of a run, by its `seq`, with the run's n-th
     * such entry); and the `message.send` jobs of the same time, a plain job of the same queue.
     */
    async stepTimes(args: StepTimesArgs): Promise<StepTimes> {
      const epoch = (iso: string) => Date.parse(iso);
      const runIds = new Set((await db.selectFrom('runs').select('id').where('created_at', '>=', args.since).execute()).map((row) => row.id));
      const jobs = await db
        .selectFrom('jobs')
        .select(['name', 'payload', 'run_at', 'updated_at'])
        .where('name', 'in', ['run.step', 'message.send'])
        .where('status', '=', 'succeeded')
        .where('created_at', '>=', args.since)
        .execute();
      const entries = await db
        .selectFrom('run_events')
        .select(['run_id', 'seq', 'step_id', 'at'])
        .where('type', '=', 'step.started')
        .where('at', '>=', args.since)
        .orderBy('run_id')
        .orderBy('seq')
        .execute();
      const jobsOfRun = new Map<string, { seq: number; dueAt: number; settledAt: number }[]>();
      const sends: StepTimes['sends'] = [];
      for (const job of jobs) {
        if (job.name === 'message.send') {
          sends.push({ dueAt: epoch(job.run_at), settledAt: epoch(job.updated_at) });
          continue;
        }
        const payload = JSON.parse(job.payload) as { run_id: string; seq: number };
        if (!runIds.has(payload.run_id)) continue;
        const list = jobsOfRun.get(payload.run_id) ?? [];
        list.push({ seq: payload.seq, dueAt: epoch(job.run_at), settledAt: epoch(job.updated_at) });
        jobsOfRun.set(payload.run_id, list);
      }
      const entriesOfRun = new Map<string, { stepId: string; at: number }[]>();
      for (const entry of entries) {
        if (!runIds.has(entry.run_id)) continue;
        const list = entriesOfRun.get(entry.run_id) ?? [];
        list.push({ stepId: entry.step_id ?? '', at: epoch(entry.at) });
        entriesOfRun.set(entry.run_id, list);
      }
      const steps: StepTime[] = [];
      let unpaired = 0;
      for (const runId of runIds) {
        const stepJobs = (jobsOfRun.get(runId) ?? []).sort((a, b) => a.seq - b.seq);
        const started = entriesOfRun.get(runId) ?? [];
        if (stepJobs.length !== started.length) {
          unpaired++;
          continue;
        }
        stepJobs.forEach((job, index) =>
          steps.push({ runId, stepId: started[index]!.stepId, dueAt: job.dueAt, loggedAt: started[index]!.at, settledAt: job.settledAt }),
        );
      }
      return { steps, unpaired, sends };
    },

    async jobCounts(): Promise<JobCounts> {
      return { jobs: await countByStatus(db, 'jobs'), deliveries: await countByStatus(db, 'webhook_deliveries') };
    },

    /** Messages by status (received, queued, sent, delivered, read, failed). */
    messageCounts(): Promise<Record<string, number>> {
      return countByStatus(db, 'messages');
    },

    async seedConversations(args: SeedConversationsArgs): Promise<SeedConversationsResult> {
      const started = performance.now();
      for (let done = 0; done < args.count;) {
        const inThisTransaction = Math.min(ROWS_PER_TRANSACTION, args.count - done);
        await db.transaction().execute(async (trx) => {
          for (let offset = 0; offset < inThisTransaction; offset += THREADS_PER_STATEMENT) {
            const threads = Array.from({ length: Math.min(THREADS_PER_STATEMENT, inThisTransaction - offset) }, (_, i) => threadRows(args, done + offset + i));
            await trx
              .insertInto('contacts')
              .values(threads.map((thread) => thread.contact))
              .execute();
            await trx
              .insertInto('conversations')
              .values(threads.map((thread) => thread.conversation))
              .execute();
            await trx
              .insertInto('messages')
              .values(threads.map((thread) => thread.message))
              .execute();
          }
        });
        done += inThisTransaction;
      }
      await sql`analyze`.execute(db);
      return { conversations: args.count, ms: performance.now() - started };
    },

    /**
     * Gives the newest conversations a long history: `messagesEach` older messages each (earlier
     * ids than their last message, so the last message stays the one seeded first).
     */
    async seedHistory(args: SeedHistoryArgs): Promise<SeedConversationsResult> {
      const started = performance.now();
      const threads = await db
        .selectFrom('conversations')
        .select(['id', 'connection_id', 'contact_id'])
        .where('organization_id', '=', args.organizationId)
        .orderBy('id', 'desc')
        .limit(args.conversations)
        .execute();
      const past = Date.now() - 30 * 24 * 3600 * 1000;
      for (const [index, thread] of threads.entries()) {
        const owner = { organizationId: args.organizationId, connectionId: thread.connection_id, conversationId: thread.id, contactId: thread.contact_id };
        const rows = Array.from({ length: args.messagesEach }, (_, n) =>
          textMessage(owner, {
            // Not `newId`: its ids are monotonic, so they would all come after the seeded last message.
            id: `${ID_PREFIXES.message}_${ulid(past + n * 1000)}`,
            inbound: n % 2 === 0,
            status: n % 2 === 0 ? 'received' : 'read',
            body: `Earlier message ${n} of thread ${index}.`,
            providerMessageId: `wamid.history${index}x${n}`,
            at: new Date(past + n * 1000).toISOString(),
          }),
        );
        await db.transaction().execute(async (trx) => {
          for (let offset = 0; offset < rows.length; offset += THREADS_PER_STATEMENT) {
            await trx
              .insertInto('messages')
              .values(rows.slice(offset, offset + THREADS_PER_STATEMENT))
              .execute();
          }
        });
      }
      await sql`analyze`.execute(db);
      return { conversations: threads.length, ms: performance.now() - started };
    },

    /**
     * The SQL queries one GET costs, for each path. The service's store has no query counter, so a
     * twin of the service is built on the same database with one (the store's `onQuery` hook) and
     * asked through `inject`; each path runs once first, so that nothing done once per process counts.
     */
    async countQueries(args: CountQueriesArgs): Promise<number[]> {
      let queries = 0;
      const config = loadConfig(process.env);
      const counted = openStore({
        databaseUrl: config.databaseUrl,
        dataDir: config.dataDir,
        schema: process.env.BENCH_SCHEMA || undefined,
        poolSize: 1,
        onQuery: () => queries++,
      });
      const twin = await createApp({ config, store: counted, clock: systemClock });
      try {
        const counts: number[] = [];
        for (const url of args.paths) {
          const get = () => twin.server.inject({ method: 'GET', url, headers: { authorization: `Bearer ${args.token}` } });
          await get();
          queries = 0;
          const response = await get();
          if (response.statusCode !== 200) throw new Error(`GET ${url}: ${response.statusCode} ${response.body}`);
          counts.push(queries);
        }
        return counts;
      } finally {
        await twin.server.close();
        await counted.close();
      }
    },
  } satisfies ChildCommands;

  return {
    commands,
    // The worker stops before the server and store close, as in src/main.ts, so no job is cut off mid-write.
    stop: async () => worker?.stop(2_000),
  };
}
