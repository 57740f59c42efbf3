import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_PASSWORD_HASH_COST } from '../lib/crypto.ts';

/** Where media bytes live (MEDIA_STORAGE_URL): files under a directory, or objects in an S3-compatible bucket. */
export type MediaStorageConfig =
  | { kind: 'file'; directory: string }
  | {
      kind: 's3';
      bucket: string;
      /** Put before every key: empty, or ending with `/`. */
      prefix: string;
      /** Unset: AWS S3 itself, in `region`. */
      endpoint: string | undefined;
      region: string;
      forcePathStyle: boolean;
      /** From the URL's userinfo; unset: the AWS SDK's default chain (AWS_ACCESS_KEY_ID…, a profile, an instance role). */
      credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
    };

/** The service's whole configuration, parsed once from the environment in main.ts. */
export interface Config {
  port: number;
  host: string;
  publicBaseUrl: string;
  dataDir: string;
  /** The built dashboard (web/dist, made by scripts/build-dashboard.ts), served at /dashboard. */
  dashboardDir: string;
  mediaStorage: MediaStorageConfig;
  /** Unset: the embedded SQLite file under `dataDir`. */
  databaseUrl: string | undefined;
  /** Set: rate-limit buckets live in Redis, shared by every process; unset: in each process's memory. */
  redisUrl: string | undefined;
  /** Namespaces the bucket keys in Redis, so deployments (or test runs) on one Redis never share buckets. */
  rateLimitKeyPrefix: string;
  /** The per-source-address budget of unauthenticated requests; the spec's value is 20. */
  rateLimitUnauthenticatedPerMinute: number;
  /**
   * Multiplies the burst and the rate of every credential bucket (connection and organization keys,
   * OAuth and dashboard tokens); 1, the spec's limits. Raised by benchmarks and load tests only, so
   * that the limiter still runs on every request but never refuses one.
   */
  rateLimitCredentialMultiplier: number;
  /** 32 bytes. Unset: generated into `dataDir` on the first embedded start. */
  masterKey: Buffer | undefined;
  providerMode: 'sandbox' | 'cloud';
  /** Unset: the provider's own host in cloud mode, the embedded sandbox in sandbox mode. */
  providerBaseUrl: string | undefined;
  /** The provider API version the adapter speaks, e.g. `v24.0`. */
  providerApiVersion: string;
  /** The app id sent as `client_id` in the signup code exchange. */
  providerAppId: string | undefined;
  providerAppSecret: string | undefined;
  providerVerifyToken: string | undefined;
  /** How long one provider call may wait to connect, for the answer's headers and for its body. */
  providerTimeoutMs: number;
  smtpUrl: string | undefined;
  webhookAllowPrivateNetworks: boolean;
  /**
   * Every answer of a route that writes its JSON with `JSON.stringify` is also written by the response
   * schema's compiled serializer, and a difference fails the request (http/native-json.ts). For test
   * suites: it costs the compiled serializer's CPU on those routes.
   */
  verifyNativeJson: boolean;
  role: 'all' | 'api' | 'worker';
  /** How long a worker owns a job it claimed; a worker that dies holds its jobs this long. */
  workerLeaseMs: number;
  /** log2 of scrypt's N for new password hashes: 15 (OWASP's minimum) unless lowered for tests. */
  passwordHashCost: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  trustProxy: boolean;
  /** Set: `GET /metrics` answers a scraper that sends it as its bearer token. Unset: there is no such route. */
  metricsToken: string | undefined;
  /** Unset: the `local` billing adapter (plans change on local pages, no payment taken). Set: Stripe. */
  stripe: StripeConfig | undefined;
}

/** The Stripe billing adapter's settings (docs/billing.md#configuration); all required once STRIPE_SECRET_KEY is set. */
export interface StripeConfig {
  secretKey: string;
  webhookSecret: string;
  /** The flat monthly price of each paid plan. */
  prices: { pro: string; scale: string; metered: string };
  /** The `event_name` of the Billing Meter that counts messages sent. */
  meterEventName: string;
  /** Unset: Stripe's own API. Set (tests, a proxy): the SDK's host, port and protocol. */
  api: { host: string; port: number; protocol: 'http' | 'https' } | undefined;
}

export class ConfigError extends Error {
  constructor(variable: string, problem: string) {
    super(`${variable}: ${problem}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function text(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

function oneOf<const T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const value = text(env, name);
  if (value === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(name, `must be one of ${allowed.join(', ')} (got "${value}")`);
  }
  return value as T;
}

function flag(env: Env, name: string, fallback: boolean): boolean {
  const value = text(env, name);
  if (value === undefined) return fallback;
  if (['true', '1', 'yes'].includes(value.toLowerCase())) return true;
  if (['false', '0', 'no'].includes(value.toLowerCase())) return false;
  throw new ConfigError(name, `must be true or false (got "${value}")`);
}

function port(env: Env, name: string, fallback: number): number {
  const value = text(env, name);
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || parsed > 65535) throw new ConfigError(name, `must be a port number from 0 to 65535 (got "${value}")`);
  return parsed;
}

function positiveInteger(env: Env, name: string, fallback: number, max?: number): number {
  const value = text(env, name);
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || parsed < 1 || !Number.isSafeInteger(parsed)) throw new ConfigError(name, `must be a whole number of at least 1 (got "${value}")`);
  if (max !== undefined && parsed > max) throw new ConfigError(name, `must be a whole number from 1 to ${max} (got "${value}")`);
  return parsed;
}

/**
 * Below 15 a hash is faster to guess than OWASP allows. A test suite, which hashes a password for
 * every account it makes, may ask for less, but only in sandbox mode, which is never production.
 */
function passwordHashCost(env: Env, providerMode: Config['providerMode']): number {
  const cost = positiveInteger(env, 'PASSWORD_HASH_COST', DEFAULT_PASSWORD_HASH_COST, 20);
  if (cost < 10) throw new ConfigError('PASSWORD_HASH_COST', `must be a whole number from 10 to 20 (got "${cost}")`);
  if (cost < DEFAULT_PASSWORD_HASH_COST && providerMode === 'cloud')
    throw new ConfigError('PASSWORD_HASH_COST', `must be at least ${DEFAULT_PASSWORD_HASH_COST} with PROVIDER_MODE=cloud (got "${cost}")`);
  return cost;
}

function url(env: Env, name: string, protocols: readonly string[]): string | undefined {
  const value = text(env, name);
  if (value === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new ConfigError(name, 'must be a URL');
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must be a ${protocols.map((p) => p.replace(':', '://')).join(' or ')} URL`);
  }
  return value.replace(/\/+$/, '');
}

const S3_PARAMETERS = ['endpoint', 'region', 'force_path_style'];
const MEDIA_STORAGE_FORMS = 's3://[ACCESS_KEY_ID:SECRET@]bucket[/prefix][?endpoint=…&region=…&force_path_style=…] or file:///directory';

/**
 * MEDIA_STORAGE_URL. Its messages never repeat the value, which may hold a secret key; unset, the
 * files stay under DATA_DIR as they always have.
 */
function mediaStorage(env: Env, name: string, dataDir: string): MediaStorageConfig {
  const value = text(env, name);
  if (value === undefined) return { kind: 'file', directory: path.join(dataDir, 'media') };
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new ConfigError(name, `must be a URL, ${MEDIA_STORAGE_FORMS} (percent-encode reserved characters in the credentials)`);
  }
  if (parsed.protocol === 'file:') {
    if (parsed.search || parsed.hash) throw new ConfigError(name, 'a file:// URL takes no parameters');
    try {
      return { kind: 'file', directory: path.resolve(fileURLToPath(parsed)) };
    } catch {
      throw new ConfigError(name, 'a file:// URL must name a directory on this machine, as file:///var/lib/messaging/media');
    }
  }
  if (parsed.protocol !== 's3:') throw new ConfigError(name, `must be ${MEDIA_STORAGE_FORMS}`);
  return s3Storage(name, parsed);
}

function s3Storage(name: string, parsed: URL): MediaStorageConfig {
  const bucket = parsed.hostname;
  // Not repeated in the message: a secret with an unescaped reserved character can end up here.
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    throw new ConfigError(name, "the bucket (the URL's host) must be 3 to 63 lower-case letters, digits, dots and hyphens");
  }
  if (parsed.port) throw new ConfigError(name, 'a port belongs to ?endpoint=, not to the bucket');
  if (parsed.hash) throw new ConfigError(name, 'takes no #fragment');
  const segments = decode(name, parsed.pathname, 'the prefix').split('/').filter(Boolean);
  if (segments.some((segment) => !/^[A-Za-z0-9._-]+$/.test(segment) || segment === '.' || segment === '..')) {
    throw new ConfigError(name, "the key prefix (the URL's path) must be folders of letters, digits, dots, hyphens and underscores");
  }
  const parameters = new Map<string, string>();
  for (const [key, parameter] of parsed.searchParams) {
    if (!S3_PARAMETERS.includes(key)) throw new ConfigError(name, `has an unknown parameter "${key}"; the parameters are ${S3_PARAMETERS.join(', ')}`);
    if (parameters.has(key)) throw new ConfigError(name, `gives the parameter "${key}" twice`);
    parameters.set(key, parameter.trim());
  }
  const endpoint = s3Endpoint(name, parameters.get('endpoint'));
  const region = parameters.get('region') || (endpoint === undefined ? undefined : 'us-east-1');
  if (region === undefined) throw new ConfigError(name, "needs ?region= (the bucket's AWS region) when it names no endpoint");
  if (!/^[a-z0-9-]{1,32}$/.test(region)) throw new ConfigError(name, `the region must be lower-case letters, digits and hyphens (got "${region}")`);
  const pathStyle = parameters.get('force_path_style');
  let forcePathStyle = endpoint !== undefined;
  if (pathStyle) {
    if (!['true', 'false'].includes(pathStyle)) throw new ConfigError(name, `force_path_style must be true or false (got "${pathStyle}")`);
    forcePathStyle = pathStyle === 'true';
  }
  if (Boolean(parsed.username) !== Boolean(parsed.password)) {
    throw new ConfigError(name, 'credentials in the URL need both the access key id and the secret: s3://ACCESS_KEY_ID:SECRET@bucket');
  }
  return {
    kind: 's3',
    bucket,
    prefix: segments.map((segment) => `${segment}/`).join(''),
    endpoint,
    region,
    forcePathStyle,
    credentials: parsed.username
      ? { accessKeyId: decode(name, parsed.username, 'the access key id'), secretAccessKey: decode(name, parsed.password, 'the secret') }
      : undefined,
  };
}

function s3Endpoint(name: string, value: string | undefined): string | undefined {
  if (!value) return undefined;
  let endpoint: URL;
  try {
    endpoint = new URL(value);
  } catch {
    throw new ConfigError(name, 'the endpoint must be an http:// or https:// URL');
  }
  if (!['http:', 'https:'].includes(endpoint.protocol)) throw new ConfigError(name, 'the endpoint must be an http:// or https:// URL');
  // Credentials go before the bucket, where they are decoded once and never logged.
  if (endpoint.username || endpoint.password) throw new ConfigError(name, 'the endpoint must not hold credentials; put them before the bucket');
  return value.replace(/\/+$/, '');
}

/** Percent-decoded; a broken escape is named, never shown (it may be part of a secret). */
function decode(name: string, value: string, what: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    throw new ConfigError(name, `${what} has a broken percent-escape`);
  }
}

function masterKey(env: Env, name: string): Buffer | undefined {
  const value = text(env, name);
  if (value === undefined) return undefined;
  const key = /^[0-9a-f]{64}$/i.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
  if (key.length !== 32) throw new ConfigError(name, 'must be 32 bytes, as 64 hex characters or base64');
  return key;
}

/**
 * A secret a client sends as `Authorization: Bearer <token>`: what the bearer syntax carries
 * (printable ASCII, no spaces), and long enough that guessing it is hopeless, since the route it
 * guards is not rate limited.
 */
function bearerToken(env: Env, name: string): string | undefined {
  const value = text(env, name);
  if (value === undefined) return undefined;
  if (!/^[\x21-\x7e]{32,512}$/.test(value)) {
    throw new ConfigError(
      name,
      `must be 32 to 512 printable ASCII characters without spaces, such as the output of \`openssl rand -hex 32\` (got ${value.length} characters)`,
    );
  }
  return value;
}

/** A Stripe object id of one kind (`sk_…`, `whsec_…`, `price_…`): the prefix catches a value pasted into the wrong variable. */
function stripeId(env: Env, name: string, prefixes: readonly string[]): string | undefined {
  const value = text(env, name);
  if (value === undefined) return undefined;
  if (!prefixes.some((prefix) => value.startsWith(prefix)) || !/^[A-Za-z0-9_]+$/.test(value)) {
    // Never repeated: it may be a secret.
    throw new ConfigError(name, `must be a Stripe value starting with ${prefixes.join(' or ')}, letters, digits and underscores only`);
  }
  return value;
}

function stripeConfig(env: Env): StripeConfig | undefined {
  const secretKey = stripeId(env, 'STRIPE_SECRET_KEY', ['sk_', 'rk_']);
  const settings = {
    STRIPE_WEBHOOK_SECRET: stripeId(env, 'STRIPE_WEBHOOK_SECRET', ['whsec_']),
    STRIPE_PRICE_PRO: stripeId(env, 'STRIPE_PRICE_PRO', ['price_']),
    STRIPE_PRICE_SCALE: stripeId(env, 'STRIPE_PRICE_SCALE', ['price_']),
    STRIPE_PRICE_METERED: stripeId(env, 'STRIPE_PRICE_METERED', ['price_']),
  };
  const meterEventName = text(env, 'STRIPE_METER_EVENT_NAME') ?? 'messages_sent';
  if (!/^[A-Za-z0-9_.:-]{1,100}$/.test(meterEventName)) {
    throw new ConfigError('STRIPE_METER_EVENT_NAME', `must be a meter's event name: 1 to 100 letters, digits and _ . : - (got "${meterEventName}")`);
  }
  const apiUrl = url(env, 'STRIPE_API_URL', ['http:', 'https:']);
  if (secretKey === undefined) {
    const stray = [
      ...Object.entries(settings)
        .filter(([, value]) => value !== undefined)
        .map(([name]) => name),
      ...(apiUrl ? ['STRIPE_API_URL'] : []),
    ];
    if (stray.length > 0) throw new ConfigError('STRIPE_SECRET_KEY', `is required when ${stray.join(', ')} ${stray.length > 1 ? 'are' : 'is'} set`);
    return undefined;
  }
  for (const [name, value] of Object.entries(settings)) if (value === undefined) throw new ConfigError(name, 'is required when STRIPE_SECRET_KEY is set');
  const { pro, scale, metered } = { pro: settings.STRIPE_PRICE_PRO!, scale: settings.STRIPE_PRICE_SCALE!, metered: settings.STRIPE_PRICE_METERED! };
  if (new Set([pro, scale, metered]).size < 3)
    throw new ConfigError('STRIPE_PRICE_METERED', 'STRIPE_PRICE_PRO, STRIPE_PRICE_SCALE and STRIPE_PRICE_METERED must be three different prices');
  let api: StripeConfig['api'];
  if (apiUrl) {
    const parsed = new URL(apiUrl);
    if (parsed.pathname !== '/' || parsed.search || parsed.username)
      throw new ConfigError('STRIPE_API_URL', 'must be a scheme, host and port only, such as http://127.0.0.1:12111');
    const protocol = parsed.protocol === 'https:' ? 'https' : 'http';
    api = { host: parsed.hostname.replace(/^\[|\]$/g, ''), port: parsed.port ? Number(parsed.port) : protocol === 'https' ? 443 : 80, protocol };
  }
  return { secretKey, webhookSecret: settings.STRIPE_WEBHOOK_SECRET!, prices: { pro, scale, metered }, meterEventName, api };
}

function apiVersion(env: Env, name: string, fallback: string): string {
  const value = text(env, name);
  if (value === undefined) return fallback;
  if (!/^v\d{1,3}\.\d{1,2}$/.test(value)) throw new ConfigError(name, `must be a provider API version such as v24.0 (got "${value}")`);
  return value;
}

export function loadConfig(env: Env): Config {
  const listenPort = port(env, 'PORT', 3000);
  const databaseUrl = url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']);
  const providerMode = oneOf(env, 'PROVIDER_MODE', ['sandbox', 'cloud'], 'sandbox');
  const dataDir = path.resolve(text(env, 'DATA_DIR') ?? './data');
  const config: Config = {
    port: listenPort,
    host: text(env, 'HOST') ?? '127.0.0.1',
    publicBaseUrl: url(env, 'PUBLIC_BASE_URL', ['http:', 'https:']) ?? `http://localhost:${listenPort}`,
    dataDir,
    dashboardDir: path.resolve(text(env, 'DASHBOARD_DIR') ?? path.join(import.meta.dirname, '../../web/dist')),
    mediaStorage: mediaStorage(env, 'MEDIA_STORAGE_URL', dataDir),
    databaseUrl,
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    rateLimitKeyPrefix: text(env, 'RATE_LIMIT_KEY_PREFIX') ?? 'ratelimit',
    rateLimitUnauthenticatedPerMinute: positiveInteger(env, 'RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE', 20),
    // At most a million: the smallest interval between tokens (an organization key's, 5 ns) stays
    // above the bucket arithmetic's rounding margin (1 ns).
    rateLimitCredentialMultiplier: positiveInteger(env, 'RATE_LIMIT_CREDENTIAL_MULTIPLIER', 1, 1_000_000),
    masterKey: masterKey(env, 'MASTER_KEY'),
    providerMode,
    providerBaseUrl: url(env, 'PROVIDER_BASE_URL', ['http:', 'https:']),
    providerApiVersion: apiVersion(env, 'PROVIDER_API_VERSION', 'v24.0'),
    providerAppId: text(env, 'PROVIDER_APP_ID'),
    providerAppSecret: text(env, 'PROVIDER_APP_SECRET'),
    providerVerifyToken: text(env, 'PROVIDER_VERIFY_TOKEN'),
    providerTimeoutMs: positiveInteger(env, 'PROVIDER_TIMEOUT_MS', 10_000),
    smtpUrl: url(env, 'SMTP_URL', ['smtp:', 'smtps:']),
    webhookAllowPrivateNetworks: flag(env, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS', false),
    verifyNativeJson: flag(env, 'VERIFY_NATIVE_JSON', false),
    role: oneOf(env, 'ROLE', ['all', 'api', 'worker'], 'all'),
    workerLeaseMs: positiveInteger(env, 'WORKER_LEASE_MS', 60_000),
    passwordHashCost: passwordHashCost(env, providerMode),
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
    trustProxy: flag(env, 'TRUST_PROXY', false),
    metricsToken: bearerToken(env, 'METRICS_TOKEN'),
    stripe: stripeConfig(env),
  };
  if (providerMode === 'cloud') {
    for (const [name, value] of [
      ['PROVIDER_APP_ID', config.providerAppId],
      ['PROVIDER_APP_SECRET', config.providerAppSecret],
      ['PROVIDER_VERIFY_TOKEN', config.providerVerifyToken],
    ] as const) {
      if (!value) throw new ConfigError(name, 'is required when PROVIDER_MODE=cloud');
    }
  }
  if (providerMode === 'sandbox' && config.role === 'worker' && !config.providerBaseUrl) {
    // The sandbox is served by a process that listens; a worker listens on nothing, so it would call
    // a sandbox that is not there.
    throw new ConfigError(
      'PROVIDER_BASE_URL',
      "is required when ROLE=worker in sandbox mode: the sandbox's Graph address on an api process, such as http://api:3000/sandbox/graph",
    );
  }
  if (databaseUrl && !config.masterKey) {
    // A generated key on one machine's disk would strand every other process on the shared database.
    throw new ConfigError('MASTER_KEY', 'is required when DATABASE_URL is set');
  }
  return config;
}

/**
 * The embedded setup keeps its master key beside its database, created on the first start, so that
 * `npm start` needs no configuration at all.
 */
export function ensureMasterKey(config: Config): Buffer {
  if (config.masterKey) return config.masterKey;
  const file = path.join(config.dataDir, 'master.key');
  if (existsSync(file)) {
    const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
    if (key.length !== 32) throw new ConfigError('MASTER_KEY', `the key in ${file} is not 32 bytes`);
    return key;
  }
  mkdirSync(config.dataDir, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(file, key.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
  return key;
}
