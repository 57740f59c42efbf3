/**
 * The sandbox's own tables, kept in the service's store so that the simulated provider survives a
 * restart and is the same world for every process that serves it. The conventions are the store's
 * (db/dialect.ts): timestamps as ISO-8601 UTC text, JSON as text, booleans as 0/1 integers, so one
 * query runs on SQLite and PostgreSQL alike. `seq` columns are monotonic ULIDs: creation order.
 */

export interface SandboxWabaRow {
  waba_id: string;
  name: string;
  created_at: string;
}

/** An app subscribed to an account's webhooks (§7.3); its override replaces the sandbox's URL. */
export interface SandboxSubscriptionRow {
  waba_id: string;
  app_id: string;
  override_callback_uri: string | null;
  created_at: string;
}

export interface SandboxNumberRow {
  phone_number_id: string;
  seq: string;
  waba_id: string;
  display_phone_number: string;
  verified_name: string;
  coexistence: number;
  quality_rating: string;
  messaging_limit_tier: string;
  throughput_level: string;
  pin_enabled: number;
  /** JSON array of epoch milliseconds: `/register` calls, for the 10-per-72-hours limit. */
  register_attempts: string;
  onboarded_at: string;
  /** JSON object: sync type → ISO time it was requested. */
  sync_requested: string;
}

/** A business token, by its SHA-256: the sandbox never stores a token it could hand out again. */
export interface SandboxTokenRow {
  token_hash: string;
  waba_id: string;
  app_id: string;
  revoked: number;
  created_at: string;
}

/** A single-use code minted by the control API to re-authorise an existing number. */
export interface SandboxCodeRow {
  code: string;
  phone_number_id: string;
  spent_at: string | null;
  created_at: string;
}

/** Every Graph node id handed out, so that numbers, accounts, media and templates never collide. */
export interface SandboxNodeIdRow {
  id: string;
}

export interface SandboxMessageRow {
  id: string;
  seq: string;
  direction: string;
  phone_number_id: string;
  wa_id: string;
  type: string;
  in_window: number;
  template_category: string | null;
  free_entry_point: number;
  biz_opaque_callback_data: string | null;
  created_at: string;
}

/** Per (number, user): when the user last wrote (the 24-hour window) and last came from an ad. */
export interface SandboxConversationRow {
  phone_number_id: string;
  wa_id: string;
  last_inbound_at: string | null;
  last_referral_at: string | null;
}

/** The control API's `behaviour`: one row (`id` 1); the JSON columns are null when unset. */
export interface SandboxBehaviourRow {
  id: number;
  latency_ms: number;
  fail_next: string | null;
  fail_next_async: string | null;
  auto_status: number;
  throttle: string | null;
  throughput_mps: number | null;
  template_review: string;
}

/** Fixed one-second windows of sends per number, and one-hour windows of management calls per account. */
export interface SandboxRateWindowRow {
  /** `send:{phone_number_id}` or `management:{waba_id}`. */
  key: string;
  /** The window: epoch seconds for sends, epoch hours for management calls. */
  period: number;
  count: number;
}

export interface SandboxMediaRow {
  id: string;
  seq: string;
  waba_id: string;
  phone_number_id: string;
  mime_type: string;
  size: number;
  sha256: string;
  filename: string | null;
  origin: string;
  created_at: string;
  expires_at: string;
  /** The file, base64: text keeps the column the same on both backends. The table's last column. */
  bytes: string;
}

export interface SandboxTemplateRow {
  id: string;
  seq: string;
  waba_id: string;
  name: string;
  language: string;
  category: string;
  status: string;
  parameter_format: string;
  /** JSON array of the components as defined. */
  components: string;
  reason: string | null;
  created_at: string;
}

/** The webhooks the sandbox sent (`GET /control/webhooks`), the latest `WEBHOOK_LOG_SIZE` kept. */
export interface SandboxWebhookRow {
  seq: string;
  body: string;
  signature: string;
  url: string | null;
  status: number | null;
  error: string | null;
  at: string;
}

export interface SandboxTables {
  sandbox_wabas: SandboxWabaRow;
  sandbox_subscriptions: SandboxSubscriptionRow;
  sandbox_numbers: SandboxNumberRow;
  sandbox_tokens: SandboxTokenRow;
  sandbox_codes: SandboxCodeRow;
  sandbox_node_ids: SandboxNodeIdRow;
  sandbox_messages: SandboxMessageRow;
  sandbox_conversations: SandboxConversationRow;
  sandbox_behaviour: SandboxBehaviourRow;
  sandbox_rate_windows: SandboxRateWindowRow;
  sandbox_media: SandboxMediaRow;
  sandbox_templates: SandboxTemplateRow;
  sandbox_webhooks: SandboxWebhookRow;
}
