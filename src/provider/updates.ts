/**
 * What the provider tells us through its webhooks, in the domain's words. The cloud adapter's
 * `parseProviderWebhook` turns one webhook body into a list of these; the service never reads the
 * provider's envelope itself. Message contents stay in the provider's per-type objects (snake_case,
 * unknown fields kept), because that is also the shape the API exposes for them.
 */
import type { TemplateCategory, TemplateStatus } from './provider.ts';

/** One message as the provider carries it: its type and the object named after the type. */
export interface MessageBody {
  /** The provider's type; an unknown type is reported as `unsupported`, with `original_type` in `content`. */
  type: string;
  /**
   * The object named by `type` in the provider's payload, as given (`{}` when the payload had none).
   * For `unsupported`: `{ original_type, errors? }` plus the fields of the unknown type's object.
   * For `contacts`, whose payload is an array: `{ contacts: [...] }`.
   */
  content: Record<string, unknown>;
  /** `context` of the provider: the message replied to, or forwarding flags. */
  context: { replyTo?: string; forwarded?: boolean; frequentlyForwarded?: boolean } | undefined;
  /**
   * Fields outside the type object that are not modelled (`referral`, `identity`, `errors`, ...), kept
   * as given. When `context` carries more than the fields above (`referred_product`), the whole
   * provider `context` is kept here too.
   */
  extra: Record<string, unknown>;
}

export interface ProviderErrorDetail {
  code: number;
  title: string | undefined;
  message: string | undefined;
  details: string | undefined;
}

export type ProviderStatus = 'sent' | 'delivered' | 'read' | 'played' | 'failed';

/** Where an update belongs: the number, and the account (WABA) of the envelope's `entry[].id`. */
export interface NumberRef {
  wabaId: string;
  phoneNumberId: string;
  /** Digits only, as the provider's `metadata.display_phone_number`. */
  displayPhoneNumber: string | undefined;
}

export type ProviderUpdate =
  /** A message a user sent to the business number. */
  | {
      kind: 'message';
      number: NumberRef;
      providerMessageId: string;
      /** The user's WhatsApp id (digits); undefined only for username users without a phone. */
      from: string | undefined;
      /** Business-scoped user id, when the provider sent one. */
      fromUserId: string | undefined;
      /** The profile name from `contacts[]`, when given. */
      profileName: string | undefined;
      sentAt: Date;
      body: MessageBody;
    }
  /** A delivery status of a message the business sent. */
  | {
      kind: 'status';
      number: NumberRef;
      providerMessageId: string;
      status: ProviderStatus;
      at: Date;
      recipientId: string | undefined;
      errors: ProviderErrorDetail[];
      /** `pricing.category` and `pricing.type`, when present. */
      pricing: { category: string | undefined; type: string | undefined } | undefined;
      callbackData: string | undefined;
    }
  /** Coexistence: a message the owner sent from the business app. */
  | {
      kind: 'echo';
      number: NumberRef;
      providerMessageId: string;
      /** The user the owner wrote to (digits). */
      to: string;
      sentAt: Date;
      body: MessageBody;
    }
  /** Coexistence onboarding: one chunk of the chat history import. */
  | {
      kind: 'history';
      number: NumberRef;
      phase: number | undefined;
      chunkOrder: number | undefined;
      /** 0..100; 100 means the import is complete. */
      progress: number | undefined;
      threads: {
        /** The user's phone (digits). */
        userId: string;
        messages: {
          providerMessageId: string;
          /** Business-sent when `from` is the business number. */
          direction: 'inbound' | 'outbound';
          sentAt: Date;
          /** `history_context.status` as given (DELIVERED, READ, ...). */
          status: string | undefined;
          body: MessageBody;
        }[];
      }[];
      /** Set when the owner declined sharing, or the import failed. */
      errors: ProviderErrorDetail[];
    }
  /** `message_template_status_update`. */
  | {
      kind: 'template_status';
      wabaId: string;
      providerTemplateId: string;
      name: string;
      language: string;
      /** The provider's event, upper case (APPROVED, REJECTED, PAUSED, DISABLED, REINSTATED, ...). */
      event: string;
      /**
       * The template's status after the event, in the port's words; undefined for events that name
       * no status (REINSTATED, UNARCHIVED, ...), after which the template should be read again.
       */
      status: TemplateStatus | undefined;
      category: TemplateCategory | undefined;
      /** The provider's reason, upper case (INCORRECT_CATEGORY, ...; NONE for pauses), as given. */
      reason: string | undefined;
      /** `disable_info`, `other_info`, `rejection_info`, ... as given. */
      extra: Record<string, unknown>;
    }
  /** `phone_number_quality_update`: the number's quality or messaging limit moved. */
  | {
      kind: 'number_quality';
      wabaId: string;
      displayPhoneNumber: string;
      event: string;
      /** The business portfolio's messaging limit (`TIER_2K`, ...): the field that replaces the two below. */
      maxDailyLimit: string | undefined;
      /** Deprecated by the provider (to be removed in 2026); kept while it still sends them. */
      currentLimit: string | undefined;
      oldLimit: string | undefined;
    }
  /** `account_update`: the account was connected, disconnected, restricted, ... */
  | {
      kind: 'account';
      wabaId: string;
      /** The provider's event, upper case (PARTNER_REMOVED, ACCOUNT_VIOLATION, ...). */
      event: string;
      phoneNumberId: string | undefined;
      /** `waba_info`, `ban_info`, `violation_info`, `restriction_info`, ... as given. */
      extra: Record<string, unknown>;
    }
  /** Out-of-band errors about the number (`value.errors[]`). */
  | { kind: 'errors'; number: NumberRef; errors: ProviderErrorDetail[] }
  /**
   * Kept so that nothing is dropped silently: a field we do not process (`unprocessed_field`), or a
   * part of the payload too broken to read (`malformed`: a change without `value`, a message without
   * `id` or `timestamp`, ...). `value` is the part concerned, as given; `wabaId` is `''` when even
   * the entry's id was missing.
   */
  | { kind: 'unhandled'; wabaId: string; field: string; reason: 'unprocessed_field' | 'malformed'; value: unknown };

export type ProviderUpdateKind = ProviderUpdate['kind'];
