import { randomBytes, randomInt } from 'node:crypto';
import { DAY, type Clock } from '../../lib/clock.ts';
import { randomToken } from '../../lib/crypto.ts';

/** One business number created by a code exchange, with the account (WABA) that owns it. */
export interface SandboxNumber {
  phoneNumberId: string;
  wabaId: string;
  displayPhoneNumber: string;
  verifiedName: string;
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
  bizOpaqueCallbackData?: string;
  createdAt: Date;
}

export interface FailNext {
  code: number;
  httpStatus?: number;
  details?: string;
}

export interface Behaviour {
  latencyMs: number;
  failNext: FailNext | undefined;
  autoStatus: boolean;
}

export const WINDOW_MS = DAY;

function digits(length: number): string {
  let out = String(randomInt(1, 10));
  while (out.length < length) out += String(randomInt(0, 10));
  return out;
}

/** Everything the sandbox remembers, in memory: a restart is a fresh provider. */
export function createSandboxState(clock: Clock, autoStatus: boolean) {
  const numbers = new Map<string, SandboxNumber>();
  // token → WABA it was issued for: a business token reaches exactly one customer account (§7.4).
  const tokens = new Map<string, string>();
  const messages = new Map<string, SandboxMessage>();
  // `${phoneNumberId}:${waId}` → time of the user's last inbound message.
  const lastInbound = new Map<string, number>();
  const behaviour: Behaviour = { latencyMs: 0, failNext: undefined, autoStatus };

  return {
    behaviour,
    numbers,

    /** Exchanging a code creates a fresh account and number, as Embedded Signup would have. */
    createConnection(): { accessToken: string; number: SandboxNumber } {
      const wabaId = digits(15);
      const number: SandboxNumber = {
        phoneNumberId: digits(15),
        wabaId,
        // 555-01xx numbers are reserved for fiction, so a sandbox number can never reach a real phone.
        displayPhoneNumber: `+1 631-555-01${String(randomInt(0, 100)).padStart(2, '0')}`,
        verifiedName: 'Sandbox Business',
      };
      numbers.set(number.phoneNumberId, number);
      const accessToken = `EAAS${randomToken(48)}`;
      tokens.set(accessToken, wabaId);
      return { accessToken, number };
    },

    wabaOfToken(token: string): string | undefined {
      return tokens.get(token);
    },

    numbersOfWaba(wabaId: string): SandboxNumber[] {
      return [...numbers.values()].filter((number) => number.wabaId === wabaId);
    },

    recordInbound(phoneNumberId: string, waId: string, type: string): SandboxMessage {
      const message: SandboxMessage = {
        id: newWamid(waId),
        direction: 'inbound',
        phoneNumberId,
        waId,
        type,
        inWindow: true,
        createdAt: clock.now(),
      };
      messages.set(message.id, message);
      lastInbound.set(`${phoneNumberId}:${waId}`, message.createdAt.getTime());
      return message;
    },

    recordOutbound(fields: Omit<SandboxMessage, 'id' | 'direction' | 'createdAt'>): SandboxMessage {
      const message: SandboxMessage = { ...fields, id: newWamid(fields.waId), direction: 'outbound', createdAt: clock.now() };
      messages.set(message.id, message);
      return message;
    },

    findMessage(id: string): SandboxMessage | undefined {
      return messages.get(id);
    },

    windowOpen(phoneNumberId: string, waId: string): boolean {
      const last = lastInbound.get(`${phoneNumberId}:${waId}`);
      return last !== undefined && clock.now().getTime() - last < WINDOW_MS;
    },

    takeFailNext(): FailNext | undefined {
      const failure = behaviour.failNext;
      behaviour.failNext = undefined;
      return failure;
    },
  };
}

export type SandboxState = ReturnType<typeof createSandboxState>;

/** `wamid.` + base64, the provider's shape; the recipient is folded in as the provider does. */
function newWamid(waId: string): string {
  return `wamid.${Buffer.concat([Buffer.from(`HBgL${waId}FQIAERgS`), randomBytes(18)]).toString('base64')}`;
}
