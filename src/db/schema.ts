/**
 * The tables as Kysely sees them. Timestamps are ISO-8601 UTC text, JSON columns are text and
 * booleans are 0/1 (see dialect.ts for why); stores convert rows into API shapes.
 */
export interface OrganizationsTable {
  id: string;
  name: string;
  metadata: string;
  /** 0/1 (0025_organization_settings): live automations' risky steps only as an approval's action. */
  require_approval_for_risky_actions: number;
  created_at: string;
  updated_at: string;
}

export interface UsersTable {
  id: string;
  email: string;
  name: string | null;
  password_hash: string;
  created_at: string;
  updated_at: string;
}

export interface MembersTable {
  id: string;
  organization_id: string;
  user_id: string;
  role: string;
  created_at: string;
  updated_at: string;
}

export interface DashboardSessionsTable {
  id: string;
  organization_id: string;
  member_id: string;
  access_token_hash: string;
  access_expires_at: string;
  refresh_token_hash: string;
  refresh_expires_at: string;
  /** The refresh token the last rotation replaced, and when (0016_refresh_token_reuse). */
  previous_refresh_token_hash: string | null;
  rotated_at: string | null;
  created_at: string;
  revoked_at: string | null;
}

export interface ConnectionsTable {
  id: string;
  organization_id: string;
  name: string | null;
  status: string;
  test: number;
  coexistence: number;
  phone_number_id: string | null;
  waba_id: string | null;
  display_phone_number: string | null;
  metadata: string;
  created_at: string;
  updated_at: string;
  /** The provider's business token, sealed with the master key (SecretBox). */
  access_token: string | null;
  verified_name: string | null;
  quality_rating: string | null;
  messaging_limit_tier: string | null;
  throughput_per_second: number | null;
  /** JSON: the history import of a coexistence number, or null. */
  onboarding: string | null;
  connected_at: string | null;
  disconnected_at: string | null;
}

export interface ApiKeysTable {
  id: string;
  organization_id: string;
  kind: string;
  mode: string;
  connection_id: string | null;
  name: string | null;
  scopes: string;
  key_hash: string;
  key_hint: string;
  metadata: string;
  created_by_member_id: string | null;
  created_at: string;
  revoked_at: string | null;
  rotated_to_key_id: string | null;
}

export interface OauthTokensTable {
  id: string;
  organization_id: string;
  client_name: string;
  scopes: string;
  token_hash: string;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
  /** 0028: the API the token is for (RFC 8707), `<base>/v1` or `<base>/mcp`; null before grants existed. */
  resource: string | null;
  /** 0029: the grant (consent) the token was issued under, its member and its client; null for tokens issued outside a grant. */
  grant_id: string | null;
  member_id: string | null;
  client_id: string | null;
}

/** 0029: a dynamically registered OAuth client (RFC 7591); `redirect_uris` is JSON text. */
export interface OauthClientsTable {
  id: string;
  client_name: string;
  redirect_uris: string;
  created_at: string;
  last_used_at: string;
}

/** 0029: one consent a member gave a client: the family of its codes, refresh and access tokens. */
export interface OauthGrantsTable {
  id: string;
  organization_id: string;
  member_id: string;
  /** An `oac_` id (registered) or the https URL of a client ID metadata document. */
  client_id: string;
  client_name: string;
  /** 0/1: 1 for a client identified by its metadata document's URL (its host vouches for it), 0 for a registered one. */
  client_verified: number;
  scopes: string;
  resource: string;
  created_at: string;
  last_used_at: string;
  revoked_at: string | null;
}

/** 0029: an authorization code, by its hash; `grant_id` is set once it is exchanged. */
export interface OauthAuthorizationCodesTable {
  code_hash: string;
  organization_id: string;
  member_id: string;
  client_id: string;
  client_name: string;
  client_verified: number;
  redirect_uri: string;
  code_challenge: string;
  resource: string;
  scopes: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
  grant_id: string | null;
}

/** 0029: a refresh token, by its hash; `used_at` is set when it is rotated. */
export interface OauthRefreshTokensTable {
  id: string;
  grant_id: string;
  token_hash: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

export interface AuditEventsTable {
  id: string;
  organization_id: string;
  action: string;
  actor_type: string;
  actor_id: string | null;
  credential_type: string | null;
  credential_id: string | null;
  target_type: string;
  target_id: string;
  request_id: string | null;
  data: string;
  created_at: string;
  /** 0029: the OAuth client a change was made through (an OAuth token's), else null. */
  oauth_client_id: string | null;
  oauth_client_name: string | null;
}

/** One row per (organization, mode, key); in flight while `completed_at` is null. */
export interface IdempotencyKeysTable {
  organization_id: string;
  mode: string;
  key: string;
  request_hash: string;
  /** Names the one execution allowed to complete or release the row (a taken-over row gets a new one). */
  lock_token: string;
  locked_at: string;
  response_status: number | null;
  response_body: string | null;
  created_at: string;
  completed_at: string | null;
  expires_at: string;
}

export interface JobsTable {
  id: string;
  name: string;
  payload: string;
  status: string;
  run_at: string;
  attempts: number;
  max_attempts: number;
  locked_by: string | null;
  locked_until: string | null;
  last_error: string | null;
  dedupe_key: string | null;
  created_at: string;
  updated_at: string;
}

export interface EventsTable {
  id: string;
  organization_id: string;
  connection_id: string | null;
  type: string;
  data: string;
  previous_attributes: string | null;
  created_at: string;
}

export interface WebhookEndpointsTable {
  id: string;
  organization_id: string;
  connection_id: string | null;
  url: string;
  events: string;
  description: string | null;
  status: string;
  disabled_reason: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  consecutive_failures: number;
  first_failure_at: string | null;
  metadata: string;
  created_at: string;
  updated_at: string;
}

export interface WebhookDeliveriesTable {
  id: string;
  organization_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  attempt: number;
  replay_of: string | null;
  status: string;
  response_status: number | null;
  response_excerpt: string | null;
  error: string | null;
  duration_ms: number | null;
  next_retry_at: string | null;
  created_at: string;
  completed_at: string | null;
}

export interface MailsTable {
  id: string;
  organization_id: string | null;
  to_address: string;
  subject: string;
  text: string;
  status: string;
  transport_message_id: string | null;
  error: string | null;
  created_at: string;
  sent_at: string | null;
}

export interface ProviderWebhooksTable {
  id: string;
  body_sha256: string;
  body: string;
  received_at: string;
  processed_at: string | null;
  updates: number | null;
  error: string | null;
}

export interface ContactsTable {
  id: string;
  organization_id: string;
  phone_number: string;
  name: string | null;
  profile_name: string | null;
  metadata: string;
  last_inbound_at: string | null;
  created_at: string;
  updated_at: string;
  email: string | null;
  /** The effective marketing consent: `opted_in`, `opted_out` or `unknown`. */
  marketing_consent: string;
  /** `recorded_at` and `source` of the consent record that set `marketing_consent`. */
  marketing_consent_since: string | null;
  marketing_consent_source: string | null;
  /** Set when deleted: the row stays for the messages and conversations that point at it. */
  deleted_at: string | null;
}

/** The consent history: every opt-in and opt-out recorded for a contact, kept even when it changed nothing. */
export interface ContactConsentsTable {
  id: string;
  organization_id: string;
  contact_id: string;
  topic: string;
  status: string;
  source: string;
  recorded_at: string;
  created_at: string;
}

export interface ConversationsTable {
  id: string;
  organization_id: string;
  connection_id: string;
  contact_id: string;
  state: string;
  last_message_at: string | null;
  last_inbound_at: string | null;
  metadata: string;
  created_at: string;
  updated_at: string;
  /** The window closing time (`expires_at`) the last `conversation.window_expiring` was sent for. */
  window_warning_for: string | null;
  /** The member answering it; null when unassigned (or when that member was removed). */
  assignee_id: string | null;
  /** Who answers now: `api`, `automation`, `agent` or `app`. */
  control: string;
  /** JSON: the tags, sorted; `conversation_tags` holds the same, for filtering. */
  tags: string;
}

/** One tag of one conversation: what `?tag=` searches (see 0013_conversation_workplace). */
export interface ConversationTagsTable {
  conversation_id: string;
  tag: string;
  organization_id: string;
}

/** An internal note on a conversation: never sent to the provider. */
export interface ConversationNotesTable {
  id: string;
  organization_id: string;
  conversation_id: string;
  /** The member who wrote it (dashboard tokens); null for API keys and OAuth tokens. */
  author_member_id: string | null;
  author_credential_kind: string;
  body: string;
  metadata: string;
  created_at: string;
}

export interface MessagesTable {
  id: string;
  organization_id: string;
  connection_id: string;
  conversation_id: string;
  contact_id: string;
  direction: string;
  type: string;
  /** JSON: the object named by `type`, in the provider's shape. */
  content: string;
  context: string | null;
  status: string;
  provider_message_id: string | null;
  imported: number;
  error: string | null;
  metadata: string;
  sent_at: string | null;
  /** JSON, outbound only: what the queued send gives the provider (see 0012_outbound_messages). */
  send_request: string | null;
  /** 1 for a message the owner sent from the business app (coexistence), known from its echo. */
  echo: number;
  created_at: string;
  updated_at: string;
}

export interface TemplatesTable {
  id: string;
  organization_id: string;
  connection_id: string;
  provider_template_id: string;
  name: string;
  language: string;
  category: string | null;
  status: string;
  status_reason: string | null;
  parameter_format: string;
  /** JSON: the components in the API's shape. */
  components: string;
  created_at: string;
  updated_at: string;
}

/** A file uploaded through the API or sent by a customer; its bytes are in the media storage under `storage_key`. */
export interface MediaTable {
  id: string;
  organization_id: string;
  /** The number it came in on, or the connection of the connection key that uploaded it. */
  connection_id: string | null;
  /** `upload` or `inbound`. */
  source: string;
  /** `pending` (inbound, being fetched), `ready` or `failed`. */
  status: string;
  kind: string;
  mime_type: string;
  size: number | null;
  sha256: string | null;
  filename: string | null;
  /** Set once the bytes are stored. */
  storage_key: string | null;
  /** Inbound: the provider's id to fetch the bytes with, and the SHA-256 (hex or base64) it announced. */
  provider_media_id: string | null;
  provider_sha256: string | null;
  failure_reason: string | null;
  metadata: string;
  created_at: string;
  updated_at: string;
}

/** The provider's id for a media uploaded for one sending number; the provider forgets it at `expires_at`. */
export interface MediaUploadsTable {
  media_id: string;
  connection_id: string;
  provider_media_id: string;
  expires_at: string;
  created_at: string;
}

/** One lease on a conversation (`lck_`); at most one per conversation is `held`. */
export interface ConversationLocksTable {
  id: string;
  organization_id: string;
  connection_id: string;
  conversation_id: string;
  /** `held`, or how it ended: `released`, `expired`, `idle`. */
  status: string;
  /** `acquired`, `renewed`, `transferred`, `released`, `expired` or `idle`. */
  last_change: string;
  holder_member_id: string;
  previous_holder_member_id: string | null;
  ttl_seconds: number;
  idle_seconds: number;
  acquired_at: string;
  renewed_at: string;
  expires_at: string;
  idle_expires_at: string;
  ended_at: string | null;
  /** The latest handover request while held: who asked, what they said, when. */
  request_member_id: string | null;
  request_message: string | null;
  requested_at: string | null;
  created_at: string;
  updated_at: string;
}

/** One notification (`ntf_`): a template message that must arrive on time or not at all. */
export interface NotificationsTable {
  id: string;
  organization_id: string;
  connection_id: string;
  /** `live` or `test`: the connection's, at creation. */
  mode: string;
  /** Null until the message is created for a recipient named by number alone. */
  contact_id: string | null;
  to: string;
  template_id: string;
  /** JSON: `{id, name, language, category, parameters}`. */
  template: string;
  status: string;
  send_at: string;
  /** When its send job runs: `send_at`, or later along the number's lane (see 0018_notifications). */
  due_at: string;
  expires_at: string;
  batch_id: string | null;
  batch_index: number | null;
  dedupe_key: string | null;
  /** The dedupe key while it is reserved (24 hours); see 0018_notifications. */
  dedupe_claim: string | null;
  schedule_id: string | null;
  occurrence_id: string | null;
  message_id: string | null;
  attempts: number;
  /** JSON `{code, message}`. */
  error: string | null;
  replay_of: string | null;
  replayed_by: string | null;
  sent_at: string | null;
  delivered_at: string | null;
  failed_at: string | null;
  expired_at: string | null;
  canceled_at: string | null;
  metadata: string;
  created_at: string;
  updated_at: string;
}

/** One batch (`ntb_`): what a batch request created, and the recipients it refused. */
export interface NotificationBatchesTable {
  id: string;
  organization_id: string;
  connection_id: string;
  mode: string;
  /** `all_or_nothing` or `partial`. */
  atomicity: string;
  /** JSON: `{id, name, language, category}`. */
  template: string;
  recipient_count: number;
  /** JSON: `[{index, code, message, param}]`, the recipients refused. */
  errors: string;
  send_at: string;
  expires_at: string;
  schedule_id: string | null;
  occurrence_id: string | null;
  metadata: string;
  created_at: string;
}

/** A recurring (or one-off) action (`sch_`); deleted softly, so that what it created keeps its reference. */
export interface SchedulesTable {
  id: string;
  organization_id: string;
  /** The target's sending number, when it has one. */
  connection_id: string | null;
  name: string | null;
  /** `active`, `paused` or `completed`. */
  status: string;
  paused_reason: string | null;
  /** An IANA time zone. */
  timezone: string;
  /** JSON: `{type: once, at}`, `{type: cron, expression}` or `{type: interval, every_seconds}`. */
  recurrence: string;
  start_at: string;
  end_at: string | null;
  max_occurrences: number | null;
  /** `skip` or `allow`. */
  overlap_policy: string;
  catchup_window_seconds: number;
  /** JSON: what each occurrence creates (a notification target, as checked and stored). */
  target: string;
  /** The slot of the one queued fire job; null when none is queued (paused, completed). */
  next_occurrence_at: string | null;
  last_occurrence_at: string | null;
  occurrence_count: number;
  consecutive_failures: number;
  metadata: string;
  /** Bumped by every change through the API; a fire job carries the revision it was queued for. */
  revision: number;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

/** One slot of a schedule that came due (`occ_`): unique per (schedule_id, scheduled_for). */
export interface ScheduleOccurrencesTable {
  id: string;
  organization_id: string;
  schedule_id: string;
  scheduled_for: string;
  /** ISO 8601 with the offset of the schedule's time zone when it came due. */
  scheduled_for_local: string;
  /** `fired`, `skipped`, `missed`, `failed` or `canceled`. */
  status: string;
  reason: string | null;
  fired_at: string | null;
  /** JSON: `{notification_id}` or `{batch_id}`; null unless fired. */
  result: string | null;
  /** JSON: `{code, message}` of a failed occurrence. */
  error: string | null;
  created_at: string;
}

/** An automation (`aut_`); deleted softly, so that its runs keep their reference (0022_automations). */
export interface AutomationsTable {
  id: string;
  organization_id: string;
  /** `live` or `test`: the connections it runs on. */
  mode: string;
  /** Null: every connection of its mode. */
  connection_id: string | null;
  name: string;
  description: string | null;
  /** `draft`, `enabled` or `disabled`. */
  status: string;
  /** `user` or `consecutive_failures`, while disabled. */
  disabled_reason: string | null;
  /** The deployed version's trigger type and event type, copied for the trigger lookup. */
  trigger_type: string | null;
  trigger_event: string | null;
  deployed_version: number | null;
  previous_deployed_version: number | null;
  latest_version: number;
  consecutive_failures: number;
  metadata: string;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

/** One immutable version of an automation's definition (`autv_`). */
export interface AutomationVersionsTable {
  id: string;
  organization_id: string;
  automation_id: string;
  /** 1, 2, ... per automation. */
  number: number;
  /** JSON: the definition, as validated. */
  definition: string;
  message: string | null;
  /** The credential (`key_`, `ses_`, `otk_`) or member that wrote it. */
  created_by: string;
  /** JSON: string[]. */
  warnings: string;
  created_at: string;
}

/** One run of an automation (`run_`), pinned to the version it started on. */
export interface RunsTable {
  id: string;
  organization_id: string;
  automation_id: string;
  version: number;
  mode: string;
  dry_run: number;
  connection_id: string | null;
  conversation_id: string | null;
  contact_id: string | null;
  /** JSON: `{type, message_id | event_id | occurrence_id}`. */
  trigger: string;
  /** What started it, unique per automation: a trigger processed twice starts one run. */
  trigger_key: string | null;
  /** 0 for a run no other run caused; chains stop at 3. */
  depth: number;
  /** `queued`, `running`, `waiting`, `paused`, `completed`, `canceled`, `failed` or `timed_out`. */
  status: string;
  /** The compare-and-set counter every step job carries. */
  seq: number;
  current_step_id: string | null;
  /** When the current step began: a wait takes replies newer than this. */
  step_started_at: string | null;
  /** JSON: `{type: reply|approval|delay|control, until, approval_id}`. */
  waiting_for: string | null;
  /** JSON: the message expressions read as `message`: the one that started the run, then each reply a wait took. */
  last_message: string | null;
  /** JSON: a reply that arrived while the run was not yet waiting for one; the next wait takes it. */
  early_reply: string | null;
  input: string;
  variables: string;
  /** JSON: visits per step id (the runtime loop guard). */
  visits: string;
  outcome: string | null;
  /** JSON: `{code, message, step_id}`. */
  error: string | null;
  steps_executed: number;
  /** The number of the last entry of its event log. */
  event_count: number;
  replay_of: string | null;
  /** The credential that triggered it through the API, if one did. */
  triggered_by: string | null;
  /** The member behind that credential, when it was a dashboard session. */
  triggered_by_member_id: string | null;
  /** JSON: the plan an approval froze for the action step it goes to; cleared once the run moves on. */
  approved_action: string | null;
  timeout_at: string;
  started_at: string | null;
  finished_at: string | null;
  created_at: string;
  updated_at: string;
}

/** A run's request for a human decision (`apr_`); 0023_approvals explains the columns. */
export interface ApprovalsTable {
  id: string;
  organization_id: string;
  mode: string;
  connection_id: string | null;
  run_id: string;
  run_seq: number;
  automation_id: string;
  step_id: string;
  /** `pending`, `approved`, `rejected`, `expired` or `canceled`. */
  status: string;
  title: string;
  summary: string | null;
  /** JSON: the frozen action as the API shows it. */
  action: string;
  /** JSON: the action step's plan as rendered at the request; what an approval runs. */
  plan: string;
  /** JSON: `{roles, member_ids, allow_api_keys}`. */
  approvers: string;
  triggered_by: string | null;
  triggered_by_member_id: string | null;
  requested_at: string;
  expires_at: string;
  decided_at: string | null;
  decided_by_member_id: string | null;
  decided_by_key_id: string | null;
  comment: string | null;
  updated_at: string;
}

/** One entry of a run's event log, numbered from 1 per run. */
export interface RunEventsTable {
  run_id: string;
  seq: number;
  organization_id: string;
  type: string;
  step_id: string | null;
  contact_id: string | null;
  at: string;
  /** JSON. */
  data: string;
}

/** An organization's credentials for another system (`cna_`); 0024_connectors explains the columns. */
export interface ConnectorAccountsTable {
  id: string;
  organization_id: string;
  mode: string;
  connection_id: string | null;
  connector: string;
  name: string;
  /** pending | active | needs_reauth | revoked | error */
  status: string;
  base_url: string;
  /** JSON array of host names. */
  allowed_hosts: string;
  /** Sealed JSON of the connector's fields but `base_url` (AAD: the id); null once disconnected. */
  credentials: string | null;
  secret_hint: string | null;
  last_verified_at: string | null;
  last_used_at: string | null;
  last_error: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

/** An invitation to join an organization (`inv_`); 0020_invites explains the statuses. */
export interface InvitesTable {
  id: string;
  organization_id: string;
  /** Normalised (trimmed, lower-case). */
  email: string;
  role: string;
  /** `pending`, `accepted`, `revoked`, or `expired` once a newer invite to the email replaced it. */
  status: string;
  /** SHA-256 (hex) of the token of the latest mail; the token itself is never stored. */
  token_hash: string;
  expires_at: string;
  invited_by_member_id: string;
  /** The member that accepting it made. */
  member_id: string | null;
  last_sent_at: string;
  accepted_at: string | null;
  revoked_at: string | null;
  created_at: string;
  updated_at: string;
}

/** One mail of an invite (its creation or a resend), by the hash of the token it carried. */
export interface InviteSendsTable {
  token_hash: string;
  organization_id: string;
  invite_id: string;
  sent_at: string;
}

/** 0026_usage: live facts per (organization, UTC day, meter, connection, automation); `''` for none. */
export interface UsageCountersTable {
  organization_id: string;
  day: string;
  meter: string;
  connection_id: string;
  automation_id: string;
  quantity: number;
}

/** 0026_usage: the same facts per calendar month (`YYYY-MM`), for limits and thresholds. */
export interface UsagePeriodsTable {
  organization_id: string;
  period: string;
  meter: string;
  quantity: number;
}

/** 0026_usage: each (meter, threshold, period) reached, once; `connection_id` is `''` except for the messaging tier. */
export interface UsageThresholdsTable {
  organization_id: string;
  period: string;
  meter: string;
  connection_id: string;
  threshold_percent: number;
  quantity: number;
  limit: number;
  reached_at: string;
}

/** 0026_usage: when each contact was last sent a message through each number. */
export interface UsageRecipientsTable {
  organization_id: string;
  connection_id: string;
  contact_id: string;
  last_sent_at: string;
}

/** 0027_billing: an organization's subscription; no row is `free`, `active`, `local`. */
export interface BillingSubscriptionsTable {
  organization_id: string;
  plan: string;
  status: string;
  provider: string;
  stripe_customer_id: string | null;
  stripe_subscription_id: string | null;
  current_period_end: string | null;
  cancel_at_period_end: number;
  created_at: string;
  updated_at: string;
}

/** 0027_billing: each Stripe event received, once; `object_id` is the id of `data.object`. */
export interface BillingStripeEventsTable {
  id: string;
  type: string;
  object_id: string;
  received_at: string;
  processed_at: string | null;
}

/** 0027_billing: an hour of billed usage frozen for (and then reported as) one Billing Meter event. */
export interface BillingMeterReportsTable {
  organization_id: string;
  hour: string;
  period: string;
  identifier: string;
  stripe_customer_id: string;
  quantity: number;
  status: 'pending' | 'reported';
  created_at: string;
  reported_at: string | null;
}

export interface Database {
  organizations: OrganizationsTable;
  users: UsersTable;
  members: MembersTable;
  dashboard_sessions: DashboardSessionsTable;
  connections: ConnectionsTable;
  api_keys: ApiKeysTable;
  oauth_tokens: OauthTokensTable;
  oauth_clients: OauthClientsTable;
  oauth_grants: OauthGrantsTable;
  oauth_authorization_codes: OauthAuthorizationCodesTable;
  oauth_refresh_tokens: OauthRefreshTokensTable;
  audit_events: AuditEventsTable;
  idempotency_keys: IdempotencyKeysTable;
  jobs: JobsTable;
  events: EventsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  mails: MailsTable;
  provider_webhooks: ProviderWebhooksTable;
  contacts: ContactsTable;
  contact_consents: ContactConsentsTable;
  conversations: ConversationsTable;
  conversation_locks: ConversationLocksTable;
  conversation_tags: ConversationTagsTable;
  conversation_notes: ConversationNotesTable;
  messages: MessagesTable;
  templates: TemplatesTable;
  media: MediaTable;
  media_uploads: MediaUploadsTable;
  notifications: NotificationsTable;
  notification_batches: NotificationBatchesTable;
  schedules: SchedulesTable;
  schedule_occurrences: ScheduleOccurrencesTable;
  invites: InvitesTable;
  invite_sends: InviteSendsTable;
  automations: AutomationsTable;
  automation_versions: AutomationVersionsTable;
  runs: RunsTable;
  approvals: ApprovalsTable;
  run_events: RunEventsTable;
  connector_accounts: ConnectorAccountsTable;
  usage_counters: UsageCountersTable;
  usage_periods: UsagePeriodsTable;
  usage_thresholds: UsageThresholdsTable;
  usage_recipients: UsageRecipientsTable;
  billing_subscriptions: BillingSubscriptionsTable;
  billing_stripe_events: BillingStripeEventsTable;
  billing_meter_reports: BillingMeterReportsTable;
}
