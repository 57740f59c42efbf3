import { pooledRandomFraction } from './crypto.ts';
import { monotonicFactory } from 'ulid';

/**
 * Every resource prefix of the API. Ids are `<prefix>_<ULID>`: the ULID's first ten characters are the
 * creation time, so ids sort by creation and a list ordered by id is ordered by time. The factory is
 * monotonic, so ids minted in the same millisecond still sort in minting order.
 */
export const ID_PREFIXES = {
  message: 'msg',
  conversation: 'cnv',
  connection: 'conn',
  organization: 'org',
  event: 'evt',
  contact: 'ct',
  contactConsent: 'cns',
  template: 'tpl',
  media: 'med',
  notification: 'ntf',
  notificationBatch: 'ntb',
  schedule: 'sch',
  scheduleOccurrence: 'occ',
  automation: 'aut',
  automationVersion: 'autv',
  run: 'run',
  approval: 'apr',
  connectorAccount: 'cna',
  webhookEndpoint: 'we',
  webhookDelivery: 'wd',
  apiKey: 'key',
  member: 'mem',
  invite: 'inv',
  note: 'note',
  lock: 'lck',
  auditEvent: 'aud',
  user: 'usr',
  dashboardSession: 'ses',
  oauthToken: 'otk',
  oauthClient: 'oac',
  oauthGrant: 'oag',
  oauthRefreshToken: 'orf',
  request: 'req',
  job: 'job',
  mail: 'mail',
  providerWebhook: 'pwh',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;
export type IdPrefix = (typeof ID_PREFIXES)[IdKind];

// The ulid package asks its random source once per character, and its default source makes a
// separate crypto call each time: the pooled source keeps ids just as random at a fraction of the
// cost (measured: ~85 µs down to ~1.5 µs per fresh id).
const nextUlid = monotonicFactory(pooledRandomFraction);

export function newId(kind: IdKind, now: number = Date.now()): string {
  return `${ID_PREFIXES[kind]}_${nextUlid(now)}`;
}

const ULID_PATTERN = '[0-9A-HJKMNP-TV-Z]{26}';

/** A regular-expression source that matches one id of the given kind, for schemas. */
export function idPattern(kind: IdKind): string {
  return `^${ID_PREFIXES[kind]}_${ULID_PATTERN}$`;
}

export function isIdOf(kind: IdKind, value: string): boolean {
  return new RegExp(idPattern(kind)).test(value);
}
