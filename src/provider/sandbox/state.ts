import { randomBytes, randomInt } from 'node:crypto';
import { DAY, type Clock } from '../../lib/clock.ts';
import { randomToken } from '../../lib/crypto.ts';

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
  /** App id → the subscription; `overrideCallbackUri` replaces the sandbox's webhook URL for this account. */
  subscribedApps: Map<string, { overrideCallbackUri?: string }>;
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
 * that a long benchmark run does not grow the process without bound.
 */
export const MAX_REMEMBERED_MESSAGES = 200_000;
/** A click-to-WhatsApp referral makes replies free for 72 hours (free entry point, §9). */
export const FREE_ENTRY_POINT_MS = 3 * DAY;

function digits(length: number): string {
  let out = String(randomInt(1, 10));
  while (out.length < length) out += String(randomInt(0, 10));
  return out;
}

/** Everything the sandbox remembers, in memory: a restart is a fresh provider. */
export function createSandboxState(clock: Clock, options: { autoStatus: boolean; templateReview: TemplateReview }) {
  const numbers = new Map<string, SandboxNumber>();
  const wabas = new Map<string, SandboxWaba>();
  // A business token reaches exactly one customer account (§7.4).
  const tokens = new Map<string, SandboxToken>();
  // Codes minted by the control API to re-authorise an existing number: code → phone number id.
  const reauthorisationCodes = new Map<string, string>();
  const spentCodes = new Set<string>();
  const messages = new Map<string, SandboxMessage>();
  function remember(message: SandboxMessage): void {
    messages.set(message.id, message);
    // Insertion order is age order, so the first key is the oldest message.
    if (messages.size > MAX_REMEMBERED_MESSAGES) messages.delete(messages.keys().next().value as string);
  }
  // `${phoneNumberId}:${waId}` → time of the user's last inbound message / last ad referral.
  const lastInbound = new Map<string, number>();
  const lastReferral = new Map<string, number>();
  // Every Graph node id handed out, so that numbers, accounts, media and templates never collide.
  const nodeIds = new Set<string>();
  const behaviour: Behaviour = {
    latencyMs: 0,
    failNext: undefined,
    failNextAsync: undefined,
    autoStatus: options.autoStatus,
    throttle: undefined,
    throughputMps: undefined,
    templateReview: options.templateReview,
  };

  /** A fresh numeric Graph id; 15 digits keep it below 2^53, so webhooks can carry it as a JSON number. */
  function newNodeId(): string {
    for (;;) {
      const id = digits(15);
      if (!nodeIds.has(id)) {
        nodeIds.add(id);
        return id;
      }
    }
  }

  function issueToken(wabaId: string, appId: string): string {
    const accessToken = `EAAS${randomToken(48)}`;
    tokens.set(accessToken, { wabaId, appId, revoked: false });
    return accessToken;
  }

  return {
    behaviour,
    numbers,
    wabas,
    newNodeId,

    /**
     * Exchanging a code creates a fresh account and number, as Embedded Signup would have; a code the
     * control API minted for an existing number issues a new token for that same number instead.
     * Returns undefined for a minted code that was already spent (codes are single use).
     */
    exchangeCode(code: string, appId: string): { accessToken: string; number: SandboxNumber; created: boolean } | undefined {
      if (spentCodes.has(code)) return undefined;
      const existing = reauthorisationCodes.get(code);
      if (existing !== undefined) {
        reauthorisationCodes.delete(code);
        spentCodes.add(code);
        const number = numbers.get(existing);
        if (number === undefined) return undefined;
        return { accessToken: issueToken(number.wabaId, appId), number, created: false };
      }
      const wabaId = newNodeId();
      wabas.set(wabaId, { wabaId, name: 'Sandbox Business', subscribedApps: new Map() });
      const number: SandboxNumber = {
        phoneNumberId: newNodeId(),
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
        onboardedAt: clock.now(),
        syncRequested: {},
      };
      numbers.set(number.phoneNumberId, number);
      return { accessToken: issueToken(wabaId, appId), number, created: true };
    },

    /** A single-use code that, exchanged, issues a new token for this same number. */
    mintReauthorisationCode(phoneNumberId: string): string {
      const code = `reauth-${randomToken(18)}`;
      reauthorisationCodes.set(code, phoneNumberId);
      return code;
    },

    findToken(token: string): SandboxToken | undefined {
      return tokens.get(token);
    },

    /** Revokes one token, or every token of an account; answers how many were live. */
    revokeTokens(match: { accessToken: string } | { wabaId: string }): number {
      let revoked = 0;
      for (const [token, grant] of tokens) {
        const hit = 'accessToken' in match ? token === match.accessToken : grant.wabaId === match.wabaId;
        if (hit && !grant.revoked) {
          grant.revoked = true;
          revoked += 1;
        }
      }
      return revoked;
    },

    numbersOfWaba(wabaId: string): SandboxNumber[] {
      return [...numbers.values()].filter((number) => number.wabaId === wabaId);
    },

    /** A message with its id and time but not yet stored, so that building its webhook can still fail. */
    draftMessage(direction: SandboxMessage['direction'], phoneNumberId: string, waId: string, type: string): SandboxMessage {
      return { id: newWamid(waId), direction, phoneNumberId, waId, type, inWindow: true, createdAt: clock.now() };
    },

    /** Stores a user's message; any user message (re)opens the 24-hour window (§9). */
    recordInbound(message: SandboxMessage, options: { referral?: boolean } = {}): void {
      remember(message);
      const key = `${message.phoneNumberId}:${message.waId}`;
      lastInbound.set(key, message.createdAt.getTime());
      if (options.referral) lastReferral.set(key, message.createdAt.getTime());
    },

    recordOutbound(fields: Omit<SandboxMessage, 'id' | 'direction' | 'createdAt'>): SandboxMessage {
      const message: SandboxMessage = { ...fields, id: newWamid(fields.waId), direction: 'outbound', createdAt: clock.now() };
      remember(message);
      return message;
    },

    /** The messages a user was sent, oldest first: how a test proves a send reached the provider once. */
    outboundTo(waId: string): SandboxMessage[] {
      return [...messages.values()].filter((message) => message.direction === 'outbound' && message.waId === waId);
    },
    findMessage(id: string): SandboxMessage | undefined {
      return messages.get(id);
    },
    /** What a number sent, oldest first: when each send arrived, for pacing checks. */
    sentBy(phoneNumberId: string): SandboxMessage[] {
      return [...messages.values()].filter((message) => message.direction === 'outbound' && message.phoneNumberId === phoneNumberId);
    },

    windowOpen(phoneNumberId: string, waId: string): boolean {
      const last = lastInbound.get(`${phoneNumberId}:${waId}`);
      return last !== undefined && clock.now().getTime() - last < WINDOW_MS;
    },

    inFreeEntryPoint(phoneNumberId: string, waId: string): boolean {
      const last = lastReferral.get(`${phoneNumberId}:${waId}`);
      return last !== undefined && clock.now().getTime() - last < FREE_ENTRY_POINT_MS;
    },

    takeFailNext(): FailNext | undefined {
      const failure = behaviour.failNext;
      behaviour.failNext = undefined;
      return failure;
    },

    takeFailNextAsync(): FailNext | undefined {
      const failure = behaviour.failNextAsync;
      behaviour.failNextAsync = undefined;
      return failure;
    },
  };
}

export type SandboxState = ReturnType<typeof createSandboxState>;

/** `wamid.` + base64, the provider's shape; the recipient is folded in as the provider does. */
export function newWamid(waId: string): string {
  return `wamid.${Buffer.concat([Buffer.from(`HBgL${waId}FQIAERgS`), randomBytes(18)]).toString('base64')}`;
}
