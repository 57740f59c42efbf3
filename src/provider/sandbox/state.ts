import { randomInt } from 'node:crypto';
import { DAY, type Clock } from '../../lib/clock.ts';
import { pooledRandomBytes, randomToken, sha256Hex } from '../../lib/crypto.ts';
import { compileOnce } from '../../db/compiled-query.ts';
import { newSeq, type SandboxStore } from './store/index.ts';
import type { SandboxBehaviourRow, SandboxMessageRow, SandboxNumberRow } from './store/tables.ts';

export const QUALITY_RATINGS = ['GREEN', 'YELLOW', 'RED'] as const;
export type QualityRating = (typeof QUALITY_RATINGS)[number];

/** Messaging limit tiers, lowest first (§3.4); the order decides UPGRADE versus DOWNGRADE. */
export const LIMIT_TIERS = ['TIER_NOT_SET', 'TIER_50', 'TIER_250', 'TIER_1K', 'TIER_2K', 'TIER_10K', 'TIER_100K', 'TIER_UNLIMITED'] as const;
export type LimitTier = (typeof LIMIT_TIERS)[number];

export const THROUGHPUT_LEVELS = ['STANDARD', 'HIGH'] as const;
export type ThroughputLevel = (typeof THROUGHPUT_LEVELS)[number];

export const SYNC_TYPES = ['smb_app_state_sync', 'history'] as const;
export type SyncType = (typeof SYNC_TYPES)[number];

/** A code that starts with this makes the exchange create a coexistence (WhatsApp Business app) number. */
export const COEXISTENCE_CODE_PREFIX = 'coexistence';

/** One business number created by a code exchange, with the account (WABA) that owns it. */
export interface SandboxNumber {
  phoneNumberId: string;
  wabaId: string;
  displayPhoneNumber: string;
  verifiedName: string;
  /** Onboarded from the WhatsApp Business app (§7.5): 20 mps, echoes and history, no /register. */
  coexistence: boolean;
  qualityRating: QualityRating;
  messagingLimitTier: LimitTier;
  throughputLevel: ThroughputLevel;
  /** Whether `/register` set a two-step PIN (`is_pin_enabled`). */
  pinEnabled: boolean;
  /** Times of `/register` calls, for the provider's 10-per-72-hours limit (133016). */
  registerAttempts: number[];
  onboardedAt: Date;
  /** When each coexistence sync was requested through `/smb_app_data` (each is allowed once). */
  syncRequested: Partial<Record<SyncType, Date>>;
}

/** A customer account. Webhooks for it are sent only while an app is subscribed (§7.3). */
export interface SandboxWaba {
  wabaId: string;
  name: string;
}

/** An app subscribed to an account; `overrideCallbackUri` replaces the sandbox's webhook URL for it. */
export interface SandboxSubscription {
  appId: string;
  overrideCallbackUri?: string;
}

export interface SandboxToken {
  wabaId: string;
  /** The `client_id` that exchanged the code: the app that the token acts for. */
  appId: string;
  revoked: boolean;
}

export interface SandboxMessage {
  id: string;
  direction: 'outbound' | 'inbound';
  phoneNumberId: string;
  /** The user's wa_id: recipient of an outbound message, sender of an inbound one. */
  waId: string;
  type: string;
  /** Whether the customer service window was open when the message was accepted. */
  inWindow: boolean;
  /** The template's category in lower case (`marketing`, `utility`, `authentication`) for template sends. */
  templateCategory?: string;
  /** Sent within 72 hours of a click-to-WhatsApp referral: free entry point pricing (§9). */
  freeEntryPoint?: boolean;
  bizOpaqueCallbackData?: string;
  createdAt: Date;
}

export interface FailNext {
  code: number;
  httpStatus?: number;
  details?: string;
}

/** Rate-limit codes `behaviour.throttle` can answer with (§8.1, §8.3). */
export const THROTTLE_CODES = [80007, 130429, 4, 131056] as const;
export type ThrottleCode = (typeof THROTTLE_CODES)[number];

export interface Throttle {
  code: ThrottleCode;
  /** Minutes reported in `estimated_time_to_regain_access`. */
  regainMinutes: number;
  /** Calls still to refuse; undefined refuses until the throttle is cleared. */
  remaining: number | undefined;
  /** Only this account's calls are refused; undefined refuses every account's. */
  wabaId: string | undefined;
}

export const TEMPLATE_REVIEWS = ['manual', 'approve', 'reject'] as const;
export type TemplateReview = (typeof TEMPLATE_REVIEWS)[number];

export interface Behaviour {
  latencyMs: number;
  failNext: FailNext | undefined;
  /** The next accepted send answers 200 and then fails through a `failed` status webhook. */
  failNextAsync: FailNext | undefined;
  autoStatus: boolean;
  throttle: Throttle | undefined;
  /** Per-number send ceiling overriding the provider's defaults (80, 20 coexistence, 1000 HIGH). */
  throughputMps: number | undefined;
  /** What happens to a newly created template: stays PENDING, or is approved/rejected after a step. */
  templateReview: TemplateReview;
}

export const WINDOW_MS = DAY;
/**
 * Messages remembered for read receipts, replies and `/control/status`; older ones are forgotten so
 * that a long benchmark run does not grow the store without bound.
 */
export const MAX_REMEMBERED_MESSAGES = 200_000;
/** How many messages are recorded between two trims of the oldest beyond the bound. */
const TRIM_EVERY = 1_000;
/** A click-to-WhatsApp referral makes replies free for 72 hours (free entry point, §9). */
export const FREE_ENTRY_POINT_MS = 3 * DAY;

function digits(length: number): string {
  let out = String(randomInt(1, 10));
  while (out.length < length) out += String(randomInt(0, 10));
  return out;
}

const iso = (date: Date): string => date.toISOString();

function numberOf(row: SandboxNumberRow): SandboxNumber {
  return {
    phoneNumberId: row.phone_number_id,
    wabaId: row.waba_id,
    displayPhoneNumber: row.display_phone_number,
    verifiedName: row.verified_name,
    coexistence: row.coexistence === 1,
    qualityRating: row.quality_rating as QualityRating,
    messagingLimitTier: row.messaging_limit_tier as LimitTier,
    throughputLevel: row.throughput_level as ThroughputLevel,
    pinEnabled: row.pin_enabled === 1,
    registerAttempts: JSON.parse(row.register_attempts) as number[],
    onboardedAt: new Date(row.onboarded_at),
    syncRequested: Object.fromEntries(Object.entries(JSON.parse(row.sync_requested) as Record<string, string>).map(([type, at]) => [type, new Date(at)])),
  };
}

function messageOf(row: SandboxMessageRow): SandboxMessage {
  return {
    id: row.id,
    direction: row.direction as SandboxMessage['direction'],
    phoneNumberId: row.phone_number_id,
    waId: row.wa_id,
    type: row.type,
    inWindow: row.in_window === 1,
    ...(row.template_category === null ? {} : { templateCategory: row.template_category }),
    ...(row.free_entry_point === 1 ? { freeEntryPoint: true } : {}),
    ...(row.biz_opaque_callback_data === null ? {} : { bizOpaqueCallbackData: row.biz_opaque_callback_data }),
    createdAt: new Date(row.created_at),
  };
}

const parseOrUndefined = <T>(json: string | null): T | undefined => (json === null ? undefined : (JSON.parse(json) as T));

function behaviourOf(row: SandboxBehaviourRow): Behaviour {
  return {
    latencyMs: row.latency_ms,
    failNext: parseOrUndefined<FailNext>(row.fail_next),
    failNextAsync: parseOrUndefined<FailNext>(row.fail_next_async),
    autoStatus: row.auto_status === 1,
    throttle: parseOrUndefined<Throttle>(row.throttle),
    throughputMps: row.throughput_mps ?? undefined,
    templateReview: row.template_review as TemplateReview,
  };
}

const toJson = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value));

/** The behaviour columns a change writes: only the fields it names. */
function behaviourColumns(change: Partial<Behaviour>): Partial<SandboxBehaviourRow> {
  return {
    ...('latencyMs' in change ? { latency_ms: change.latencyMs } : {}),
    ...('failNext' in change ? { fail_next: toJson(change.failNext) } : {}),
    ...('failNextAsync' in change ? { fail_next_async: toJson(change.failNextAsync) } : {}),
    ...('autoStatus' in change ? { auto_status: change.autoStatus ? 1 : 0 } : {}),
    ...('throttle' in change ? { throttle: toJson(change.throttle) } : {}),
    ...('throughputMps' in change ? { throughput_mps: change.throughputMps ?? null } : {}),
    ...('templateReview' in change ? { template_review: change.templateReview } : {}),
  };
}

/** The fields of a number that the simulated world changes after it was created. */
export type NumberChange = Partial<
  Pick<SandboxNumber, 'qualityRating' | 'messagingLimitTier' | 'throughputLevel' | 'pinEnabled' | 'registerAttempts' | 'syncRequested'>
>;

function numberColumns(change: NumberChange): Partial<SandboxNumberRow> {
  return {
    ...(change.qualityRating === undefined ? {} : { quality_rating: change.qualityRating }),
    ...(change.messagingLimitTier === undefined ? {} : { messaging_limit_tier: change.messagingLimitTier }),
    ...(change.throughputLevel === undefined ? {} : { throughput_level: change.throughputLevel }),
    ...(change.pinEnabled === undefined ? {} : { pin_enabled: change.pinEnabled ? 1 : 0 }),
    ...(change.registerAttempts === undefined ? {} : { register_attempts: JSON.stringify(change.registerAttempts) }),
    ...(change.syncRequested === undefined
      ? {}
      : { sync_requested: JSON.stringify(Object.fromEntries(Object.entries(change.syncRequested).map(([type, at]) => [type, iso(at)]))) }),
  };
}

const tokenHash = (token: string): string => sha256Hex(token);

/**
 * Everything the sandbox remembers, in the host's store (store/tables.ts): numbers, accounts and
 * their subscriptions, tokens, messages and windows, and the control API's behaviour. Every process
 * serving the sandbox sees the same world, and a restart keeps it.
 */
type SandboxDb = SandboxStore['db'];

// The statements every Graph call or send makes, compiled once (db/compiled-query.ts): a stand-in
// provider in the service's own process shares its CPU with the service it answers.
const numberById = compileOnce((db: SandboxDb, p: { phoneNumberId: string }) =>
  db.selectFrom('sandbox_numbers').selectAll().where('phone_number_id', '=', p.phoneNumberId),
);
const insertMessage = compileOnce((db: SandboxDb, p: { row: SandboxMessageRow }) => db.insertInto('sandbox_messages').values(p.row));
const behaviourRow = compileOnce((db: SandboxDb, p: { id: number }) => db.selectFrom('sandbox_behaviour').selectAll().where('id', '=', p.id));
const tokenByHash = compileOnce((db: SandboxDb, p: { hash: string }) =>
  db.selectFrom('sandbox_tokens').select(['waba_id', 'app_id', 'revoked']).where('token_hash', '=', p.hash),
);
const conversationWindow = compileOnce((db: SandboxDb, p: { phoneNumberId: string; waId: string }) =>
  db
    .selectFrom('sandbox_conversations')
    .select(['last_inbound_at', 'last_referral_at'])
    .where('phone_number_id', '=', p.phoneNumberId)
    .where('wa_id', '=', p.waId),
);

export function createSandboxState(store: SandboxStore, clock: Clock, options: { autoStatus: boolean; templateReview: TemplateReview }) {
  const { db } = store;
  let recordedSinceTrim = 0;

  /** A fresh numeric Graph id; 15 digits keep it below 2^53, so webhooks can carry it as a JSON number. */
  async function newNodeId(): Promise<string> {
    for (;;) {
      const id = digits(15);
      try {
        await db.insertInto('sandbox_node_ids').values({ id }).execute();
        return id;
      } catch (error) {
        if (!store.isUniqueViolation(error)) throw error;
      }
    }
  }

  async function issueToken(wabaId: string, appId: string): Promise<string> {
    const accessToken = `EAAS${randomToken(48)}`;
    await db
      .insertInto('sandbox_tokens')
      .values({ token_hash: tokenHash(accessToken), waba_id: wabaId, app_id: appId, revoked: 0, created_at: iso(clock.now()) })
      .execute();
    return accessToken;
  }

  async function findNumber(phoneNumberId: string): Promise<SandboxNumber | undefined> {
    const row = await numberById.first(db, { phoneNumberId });
    return row === undefined ? undefined : numberOf(row);
  }

  async function remember(message: SandboxMessage): Promise<void> {
    await insertMessage.run(db, {
      row: {
        id: message.id,
        seq: newSeq(message.createdAt),
        direction: message.direction,
        phone_number_id: message.phoneNumberId,
        wa_id: message.waId,
        type: message.type,
        in_window: message.inWindow ? 1 : 0,
        template_category: message.templateCategory ?? null,
        free_entry_point: message.freeEntryPoint ? 1 : 0,
        biz_opaque_callback_data: message.bizOpaqueCallbackData ?? null,
        created_at: iso(message.createdAt),
      },
    });
    // Trimmed in batches, so that keeping the table bounded costs little per message.
    recordedSinceTrim += 1;
    if (recordedSinceTrim >= TRIM_EVERY) {
      recordedSinceTrim = 0;
      const oldestKept = await db
        .selectFrom('sandbox_messages')
        .select('seq')
        .orderBy('seq', 'desc')
        .offset(MAX_REMEMBERED_MESSAGES)
        .limit(1)
        .executeTakeFirst();
      if (oldestKept !== undefined) await db.deleteFrom('sandbox_messages').where('seq', '<=', oldestKept.seq).execute();
    }
  }

  async function outboundWhere(column: 'wa_id' | 'phone_number_id', value: string): Promise<SandboxMessage[]> {
    const rows = await db.selectFrom('sandbox_messages').selectAll().where(column, '=', value).where('direction', '=', 'outbound').orderBy('seq').execute();
    return rows.map(messageOf);
  }

  async function readBehaviour(): Promise<Behaviour> {
    const row = await behaviourRow.first(db, { id: 1 });
    if (row === undefined) throw new Error('the sandbox behaviour row is missing: ready() creates it at start');
    return behaviourOf(row);
  }

  return {
    newNodeId,

    /**
     * The behaviour row, created with the host's defaults by the first process to serve the sandbox
     * on this store; later processes and restarts keep what the control API set.
     */
    async ready(): Promise<void> {
      await db
        .insertInto('sandbox_behaviour')
        .values({
          id: 1,
          latency_ms: 0,
          fail_next: null,
          fail_next_async: null,
          auto_status: options.autoStatus ? 1 : 0,
          throttle: null,
          throughput_mps: null,
          template_review: options.templateReview,
        })
        .onConflict((conflict) => conflict.column('id').doNothing())
        .execute();
    },

    /**
     * Exchanging a code creates a fresh account and number, as Embedded Signup would have; a code the
     * control API minted for an existing number issues a new token for that same number instead.
     * Returns undefined for a minted code that was already spent (codes are single use).
     */
    async exchangeCode(code: string, appId: string): Promise<{ accessToken: string; number: SandboxNumber; created: boolean } | undefined> {
      const minted = await db.selectFrom('sandbox_codes').select(['phone_number_id', 'spent_at']).where('code', '=', code).executeTakeFirst();
      if (minted !== undefined) {
        // Spending is one conditional update, so two processes exchanging the same code cannot both win.
        const spent = await db
          .updateTable('sandbox_codes')
          .set({ spent_at: iso(clock.now()) })
          .where('code', '=', code)
          .where('spent_at', 'is', null)
          .executeTakeFirst();
        if (spent.numUpdatedRows === 0n) return undefined;
        const number = await findNumber(minted.phone_number_id);
        if (number === undefined) return undefined;
        return { accessToken: await issueToken(number.wabaId, appId), number, created: false };
      }
      const wabaId = await newNodeId();
      const now = clock.now();
      const number: SandboxNumber = {
        phoneNumberId: await newNodeId(),
        wabaId,
        // 555-01xx numbers are reserved for fiction, so a sandbox number can never reach a real phone.
        displayPhoneNumber: `+1 631-555-01${String(randomInt(0, 100)).padStart(2, '0')}`,
        verifiedName: 'Sandbox Business',
        coexistence: code.startsWith(COEXISTENCE_CODE_PREFIX),
        qualityRating: 'GREEN',
        messagingLimitTier: 'TIER_250',
        throughputLevel: 'STANDARD',
        pinEnabled: false,
        registerAttempts: [],
        onboardedAt: now,
        syncRequested: {},
      };
      await db.transaction().execute(async (trx) => {
        await trx
          .insertInto('sandbox_wabas')
          .values({ waba_id: wabaId, name: 'Sandbox Business', created_at: iso(now) })
          .execute();
        await trx
          .insertInto('sandbox_numbers')
          .values({
            phone_number_id: number.phoneNumberId,
            seq: newSeq(now),
            waba_id: wabaId,
            display_phone_number: number.displayPhoneNumber,
            verified_name: number.verifiedName,
            coexistence: number.coexistence ? 1 : 0,
            quality_rating: number.qualityRating,
            messaging_limit_tier: number.messagingLimitTier,
            throughput_level: number.throughputLevel,
            pin_enabled: 0,
            register_attempts: '[]',
            onboarded_at: iso(now),
            sync_requested: '{}',
          })
          .execute();
      });
      return { accessToken: await issueToken(wabaId, appId), number, created: true };
    },

    /** A single-use code that, exchanged, issues a new token for this same number. */
    async mintReauthorisationCode(phoneNumberId: string): Promise<string> {
      const code = `reauth-${randomToken(18)}`;
      await db
        .insertInto('sandbox_codes')
        .values({ code, phone_number_id: phoneNumberId, spent_at: null, created_at: iso(clock.now()) })
        .execute();
      return code;
    },

    async findToken(token: string): Promise<SandboxToken | undefined> {
      const row = await tokenByHash.first(db, { hash: tokenHash(token) });
      return row === undefined ? undefined : { wabaId: row.waba_id, appId: row.app_id, revoked: row.revoked === 1 };
    },

    /** Revokes one token, or every token of an account; answers how many were live. */
    async revokeTokens(match: { accessToken: string } | { wabaId: string }): Promise<number> {
      const result = await db
        .updateTable('sandbox_tokens')
        .set({ revoked: 1 })
        .where('accessToken' in match ? 'token_hash' : 'waba_id', '=', 'accessToken' in match ? tokenHash(match.accessToken) : match.wabaId)
        .where('revoked', '=', 0)
        .executeTakeFirst();
      return Number(result.numUpdatedRows);
    },

    findNumber,

    async listNumbers(): Promise<SandboxNumber[]> {
      return (await db.selectFrom('sandbox_numbers').selectAll().orderBy('seq').execute()).map(numberOf);
    },

    async numbersOfWaba(wabaId: string): Promise<SandboxNumber[]> {
      return (await db.selectFrom('sandbox_numbers').selectAll().where('waba_id', '=', wabaId).orderBy('seq').execute()).map(numberOf);
    },

    /** Whether a number of the account set a PIN through `/register`: it raises the management budget. */
    async hasRegisteredNumber(wabaId: string): Promise<boolean> {
      const row = await db
        .selectFrom('sandbox_numbers')
        .select('phone_number_id')
        .where('waba_id', '=', wabaId)
        .where('pin_enabled', '=', 1)
        .executeTakeFirst();
      return row !== undefined;
    },

    /** Writes the changed fields and answers the number as it now is. */
    async updateNumber(number: SandboxNumber, change: NumberChange): Promise<SandboxNumber> {
      await db.updateTable('sandbox_numbers').set(numberColumns(change)).where('phone_number_id', '=', number.phoneNumberId).execute();
      return { ...number, ...change };
    },

    async findWaba(wabaId: string): Promise<SandboxWaba | undefined> {
      const row = await db.selectFrom('sandbox_wabas').select(['waba_id', 'name']).where('waba_id', '=', wabaId).executeTakeFirst();
      return row === undefined ? undefined : { wabaId: row.waba_id, name: row.name };
    },

    /** The apps subscribed to an account's webhooks, first subscribed first. */
    async subscriptions(wabaId: string): Promise<SandboxSubscription[]> {
      const rows = await db
        .selectFrom('sandbox_subscriptions')
        .select(['app_id', 'override_callback_uri'])
        .where('waba_id', '=', wabaId)
        .orderBy('created_at')
        .orderBy('app_id')
        .execute();
      return rows.map((row) => ({ appId: row.app_id, ...(row.override_callback_uri === null ? {} : { overrideCallbackUri: row.override_callback_uri }) }));
    },

    /** Subscribes an app (again): a new override replaces the previous one. */
    async subscribe(wabaId: string, appId: string, overrideCallbackUri: string | undefined): Promise<void> {
      await db
        .insertInto('sandbox_subscriptions')
        .values({ waba_id: wabaId, app_id: appId, override_callback_uri: overrideCallbackUri ?? null, created_at: iso(clock.now()) })
        .onConflict((conflict) => conflict.columns(['waba_id', 'app_id']).doUpdateSet({ override_callback_uri: overrideCallbackUri ?? null }))
        .execute();
    },

    /** Unsubscribes one app, or every app of the account. */
    async unsubscribe(wabaId: string, appId?: string): Promise<void> {
      let query = db.deleteFrom('sandbox_subscriptions').where('waba_id', '=', wabaId);
      if (appId !== undefined) query = query.where('app_id', '=', appId);
      await query.execute();
    },

    /** A message with its id and time but not yet stored, so that building its webhook can still fail. */
    draftMessage(direction: SandboxMessage['direction'], phoneNumberId: string, waId: string, type: string): SandboxMessage {
      return { id: newWamid(waId), direction, phoneNumberId, waId, type, inWindow: true, createdAt: clock.now() };
    },

    /** Stores a user's message; any user message (re)opens the 24-hour window (§9). */
    async recordInbound(message: SandboxMessage, options: { referral?: boolean } = {}): Promise<void> {
      await remember(message);
      const at = iso(message.createdAt);
      const referral = options.referral ? { last_referral_at: at } : {};
      await db
        .insertInto('sandbox_conversations')
        .values({ phone_number_id: message.phoneNumberId, wa_id: message.waId, last_inbound_at: at, last_referral_at: options.referral ? at : null })
        .onConflict((conflict) => conflict.columns(['phone_number_id', 'wa_id']).doUpdateSet({ last_inbound_at: at, ...referral }))
        .execute();
    },

    async recordOutbound(fields: Omit<SandboxMessage, 'id' | 'direction' | 'createdAt'>): Promise<SandboxMessage> {
      const message: SandboxMessage = { ...fields, id: newWamid(fields.waId), direction: 'outbound', createdAt: clock.now() };
      await remember(message);
      return message;
    },

    /** The messages a user was sent, oldest first: how a test proves a send reached the provider once. */
    outboundTo(waId: string): Promise<SandboxMessage[]> {
      return outboundWhere('wa_id', waId);
    },

    async findMessage(id: string): Promise<SandboxMessage | undefined> {
      const row = await db.selectFrom('sandbox_messages').selectAll().where('id', '=', id).executeTakeFirst();
      return row === undefined ? undefined : messageOf(row);
    },

    /** What a number sent, oldest first: when each send arrived, for pacing checks. */
    sentBy(phoneNumberId: string): Promise<SandboxMessage[]> {
      return outboundWhere('phone_number_id', phoneNumberId);
    },

    /** How many messages a number sent: a cheap poll for "has the provider taken them all yet". */
    async sentCount(phoneNumberId: string): Promise<number> {
      const row = await db
        .selectFrom('sandbox_messages')
        .select((eb) => eb.fn.countAll<number>().as('count'))
        .where('phone_number_id', '=', phoneNumberId)
        .where('direction', '=', 'outbound')
        .executeTakeFirstOrThrow();
      return Number(row.count);
    },

    /** Whether the user's 24-hour window is open (§9), and whether an ad referral made replies free. */
    async conversation(phoneNumberId: string, waId: string): Promise<{ windowOpen: boolean; freeEntryPoint: boolean }> {
      const row = await conversationWindow.first(db, { phoneNumberId, waId });
      const now = clock.now().getTime();
      const within = (at: string | null | undefined, ms: number): boolean => at !== null && at !== undefined && now - Date.parse(at) < ms;
      return { windowOpen: within(row?.last_inbound_at, WINDOW_MS), freeEntryPoint: within(row?.last_referral_at, FREE_ENTRY_POINT_MS) };
    },

    behaviour: readBehaviour,

    /** Applies the fields a control call set; answers the behaviour as it now is. */
    async updateBehaviour(change: Partial<Behaviour>): Promise<Behaviour> {
      const columns = behaviourColumns(change);
      if (Object.keys(columns).length > 0) await db.updateTable('sandbox_behaviour').set(columns).where('id', '=', 1).execute();
      return readBehaviour();
    },

    /**
     * Takes a one-shot failure seen in `behaviour`: only if it is still the one set, so that of two
     * calls racing for it (in any process) exactly one fails.
     */
    async take(field: 'failNext' | 'failNextAsync', seen: FailNext): Promise<boolean> {
      const column = field === 'failNext' ? 'fail_next' : 'fail_next_async';
      const result = await db
        .updateTable('sandbox_behaviour')
        .set({ [column]: null })
        .where('id', '=', 1)
        .where(column, '=', JSON.stringify(seen))
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    /** Replaces the throttle seen in `behaviour` by `next`, if nobody changed it meanwhile. */
    async swapThrottle(seen: Throttle, next: Throttle | undefined): Promise<boolean> {
      const result = await db
        .updateTable('sandbox_behaviour')
        .set({ throttle: toJson(next) })
        .where('id', '=', 1)
        .where('throttle', '=', JSON.stringify(seen))
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },
  };
}

export type SandboxState = ReturnType<typeof createSandboxState>;

/** `wamid.` + base64, the provider's shape; the recipient is folded in as the provider does. */
export function newWamid(waId: string): string {
  return `wamid.${Buffer.concat([Buffer.from(`HBgL${waId}FQIAERgS`), pooledRandomBytes(18)]).toString('base64')}`;
}
