import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, ensureMasterKey, loadConfig } from './config.ts';

describe('configuration', () => {
  it('needs nothing to start on the embedded defaults', () => {
    const config = loadConfig({});
    assert.equal(config.port, 3000);
    assert.equal(config.databaseUrl, undefined);
    assert.equal(config.providerMode, 'sandbox');
    assert.equal(config.role, 'all');
    assert.equal(config.webhookAllowPrivateNetworks, false);
    assert.equal(config.publicBaseUrl, 'http://localhost:3000');
  });

  const stripe = {
    STRIPE_SECRET_KEY: 'sk_test_abc123',
    STRIPE_WEBHOOK_SECRET: 'whsec_abc123',
    STRIPE_PRICE_PRO: 'price_pro1',
    STRIPE_PRICE_SCALE: 'price_scale1',
    STRIPE_PRICE_METERED: 'price_metered1',
  };

  it('bills locally without STRIPE_SECRET_KEY, and through Stripe with it and its four settings', () => {
    assert.equal(loadConfig({}).stripe, undefined);
    assert.deepEqual(loadConfig({ ...stripe, STRIPE_API_URL: 'http://127.0.0.1:12111' }).stripe, {
      secretKey: 'sk_test_abc123',
      webhookSecret: 'whsec_abc123',
      prices: { pro: 'price_pro1', scale: 'price_scale1', metered: 'price_metered1' },
      meterEventName: 'messages_sent',
      api: { host: '127.0.0.1', port: 12111, protocol: 'http' },
    });
  });

  for (const [env, variable] of [
    [{ ...stripe, STRIPE_WEBHOOK_SECRET: '' }, 'STRIPE_WEBHOOK_SECRET'],
    [{ ...stripe, STRIPE_PRICE_METERED: undefined }, 'STRIPE_PRICE_METERED'],
    [{ ...stripe, STRIPE_SECRET_KEY: 'pk_test_abc' }, 'STRIPE_SECRET_KEY'],
    [{ ...stripe, STRIPE_PRICE_PRO: 'prod_abc' }, 'STRIPE_PRICE_PRO'],
    [{ ...stripe, STRIPE_PRICE_SCALE: 'price_pro1' }, 'STRIPE_PRICE_METERED'],
    [{ ...stripe, STRIPE_METER_EVENT_NAME: 'messages sent' }, 'STRIPE_METER_EVENT_NAME'],
    [{ ...stripe, STRIPE_API_URL: 'http://127.0.0.1:1/v1' }, 'STRIPE_API_URL'],
    [{ STRIPE_PRICE_PRO: 'price_pro1' }, 'STRIPE_SECRET_KEY'],
    [{ PORT: '70000' }, 'PORT'],
    [{ ROLE: 'both' }, 'ROLE'],
    [{ REDIS_URL: 'http://localhost' }, 'REDIS_URL'],
    [{ PUBLIC_BASE_URL: 'not a url' }, 'PUBLIC_BASE_URL'],
    [{ DATABASE_URL: 'postgres://db/x' }, 'MASTER_KEY'],
    [{ PROVIDER_MODE: 'cloud' }, 'PROVIDER_APP_ID'],
    [{ PROVIDER_MODE: 'cloud', PROVIDER_APP_ID: '1234' }, 'PROVIDER_APP_SECRET'],
    [{ PROVIDER_MODE: 'cloud', PROVIDER_APP_ID: '1234', PROVIDER_APP_SECRET: 's' }, 'PROVIDER_VERIFY_TOKEN'],
    [{ PROVIDER_API_VERSION: '24' }, 'PROVIDER_API_VERSION'],
    [{ RATE_LIMIT_CREDENTIAL_MULTIPLIER: '0' }, 'RATE_LIMIT_CREDENTIAL_MULTIPLIER'],
    [{ RATE_LIMIT_CREDENTIAL_MULTIPLIER: '2.5' }, 'RATE_LIMIT_CREDENTIAL_MULTIPLIER'],
    [{ RATE_LIMIT_CREDENTIAL_MULTIPLIER: '1000001' }, 'RATE_LIMIT_CREDENTIAL_MULTIPLIER'],
    [{ ROLE: 'worker' }, 'PROVIDER_BASE_URL'],
    [{ METRICS_TOKEN: 'short' }, 'METRICS_TOKEN'],
    [{ METRICS_TOKEN: 'a token with spaces that is long enough anyway' }, 'METRICS_TOKEN'],
  ] as const) {
    it(`names ${variable} when ${JSON.stringify(env)} is wrong or incomplete`, () => {
      assert.throws(
        () => loadConfig(env),
        (error: Error) => error instanceof ConfigError && error.message.startsWith(`${variable}: `),
      );
    });
  }

  it('keeps the spec’s credential limits unless RATE_LIMIT_CREDENTIAL_MULTIPLIER raises them, by a whole number up to a million', () => {
    assert.equal(loadConfig({}).rateLimitCredentialMultiplier, 1);
    assert.equal(loadConfig({ RATE_LIMIT_CREDENTIAL_MULTIPLIER: '1000' }).rateLimitCredentialMultiplier, 1000);
    assert.equal(loadConfig({ RATE_LIMIT_CREDENTIAL_MULTIPLIER: '1000000' }).rateLimitCredentialMultiplier, 1_000_000);
    for (const value of ['lots', '-3', '1e3', '1000001']) {
      assert.throws(
        () => loadConfig({ RATE_LIMIT_CREDENTIAL_MULTIPLIER: value }),
        (error: Error) =>
          error instanceof ConfigError &&
          !error.message.includes('\n') &&
          error.message.startsWith('RATE_LIMIT_CREDENTIAL_MULTIPLIER: must be a whole number') &&
          error.message.includes(`(got "${value}")`),
      );
    }
  });

  it('hashes passwords at cost 15 (N = 2^15) unless PASSWORD_HASH_COST says otherwise; below 15 only in sandbox mode', () => {
    assert.equal(loadConfig({}).passwordHashCost, 15);
    assert.equal(loadConfig({ PASSWORD_HASH_COST: '10' }).passwordHashCost, 10);
    assert.equal(loadConfig({ PASSWORD_HASH_COST: '20' }).passwordHashCost, 20);
    const cloud = { PROVIDER_MODE: 'cloud', PROVIDER_APP_ID: '1234', PROVIDER_APP_SECRET: 's', PROVIDER_VERIFY_TOKEN: 'v' };
    assert.equal(loadConfig({ ...cloud, PASSWORD_HASH_COST: '16' }).passwordHashCost, 16);
    for (const env of [{ PASSWORD_HASH_COST: '9' }, { PASSWORD_HASH_COST: '21' }, { PASSWORD_HASH_COST: 'fast' }, { ...cloud, PASSWORD_HASH_COST: '14' }]) {
      assert.throws(
        () => loadConfig(env),
        (error: Error) => error instanceof ConfigError && error.message.startsWith('PASSWORD_HASH_COST: '),
        JSON.stringify(env),
      );
    }
  });

  it('a worker in sandbox mode names the sandbox an api process serves; in cloud mode it needs nothing more', () => {
    assert.equal(loadConfig({ ROLE: 'worker', PROVIDER_BASE_URL: 'http://api:3000/sandbox/graph' }).providerBaseUrl, 'http://api:3000/sandbox/graph');
    const cloud = { PROVIDER_MODE: 'cloud', PROVIDER_APP_ID: '1234', PROVIDER_APP_SECRET: 's', PROVIDER_VERIFY_TOKEN: 'v' };
    assert.equal(loadConfig({ ...cloud, ROLE: 'worker' }).role, 'worker');
  });

  it('keeps media under DATA_DIR/media unless MEDIA_STORAGE_URL names a directory or a bucket', () => {
    assert.deepEqual(loadConfig({ DATA_DIR: '/srv/messaging' }).mediaStorage, { kind: 'file', directory: '/srv/messaging/media' });
    assert.deepEqual(loadConfig({ MEDIA_STORAGE_URL: 'file:///mnt/shared/media/' }).mediaStorage, { kind: 'file', directory: '/mnt/shared/media' });
  });

  it('reads a bucket, its key prefix, endpoint, region, path style and credentials from an s3:// URL', () => {
    assert.deepEqual(
      loadConfig({
        MEDIA_STORAGE_URL: 's3://AKIDEXAMPLE:wJal%2FrXU%2BtnFEMI@media.files/prod/media/?endpoint=https://minio.internal:9000/&region=eu-central-1',
      }).mediaStorage,
      {
        kind: 's3',
        bucket: 'media.files',
        prefix: 'prod/media/',
        endpoint: 'https://minio.internal:9000',
        region: 'eu-central-1',
        forcePathStyle: true,
        credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJal/rXU+tnFEMI' },
      },
    );
    // AWS itself: the region is required, virtual-hosted style and the SDK's own credentials by default.
    assert.deepEqual(loadConfig({ MEDIA_STORAGE_URL: 's3://media-files?region=us-west-2' }).mediaStorage, {
      kind: 's3',
      bucket: 'media-files',
      prefix: '',
      endpoint: undefined,
      region: 'us-west-2',
      forcePathStyle: false,
      credentials: undefined,
    });
    const minio = loadConfig({ MEDIA_STORAGE_URL: 's3://media-files?endpoint=http://127.0.0.1:9000&force_path_style=false' }).mediaStorage;
    assert.ok(minio.kind === 's3' && minio.region === 'us-east-1' && !minio.forcePathStyle);
  });

  for (const value of [
    'ftp://files.example.com/media',
    'media/on/disk',
    'file://fileserver/share/media',
    's3://Media_Files?region=us-east-1',
    's3://media-files',
    's3://media-files:9000?region=us-east-1',
    's3://media-files/a%2F..%2Fb?region=us-east-1',
    's3://media-files?region=us-east-1&forcePathStyle=true',
    's3://media-files?region=us-east-1&force_path_style=yes',
    's3://media-files?endpoint=ftp://minio',
    's3://media-files?endpoint=http://AKID:s3cr3t-key@minio',
    's3://AKID:@media-files?region=us-east-1',
    's3://AKID:s3cr3t%zz-key@media-files?region=us-east-1',
    's3://AKID:s3cr3t/key@media-files?region=us-east-1',
  ]) {
    it(`refuses MEDIA_STORAGE_URL=${value} in one line that never repeats a secret`, () => {
      assert.throws(
        () => loadConfig({ MEDIA_STORAGE_URL: value }),
        (error: Error) =>
          error instanceof ConfigError &&
          error.message.startsWith('MEDIA_STORAGE_URL: ') &&
          !error.message.includes('\n') &&
          !error.message.includes('s3cr3t') &&
          !error.message.includes('AKID'),
      );
    });
  }

  it('takes a metrics token of 32 or more printable characters, and never repeats it in an error', () => {
    assert.equal(loadConfig({}).metricsToken, undefined);
    const token = 'f'.repeat(64);
    assert.equal(loadConfig({ METRICS_TOKEN: token }).metricsToken, token);
    const secret = 'sëcret-' + 'x'.repeat(40);
    assert.throws(
      () => loadConfig({ METRICS_TOKEN: secret }),
      (error: Error) => error instanceof ConfigError && error.message.startsWith('METRICS_TOKEN: ') && !error.message.includes(secret),
    );
  });

  it('accepts a master key as hex or base64', () => {
    const hex = 'ab'.repeat(32);
    assert.equal(loadConfig({ MASTER_KEY: hex }).masterKey?.toString('hex'), hex);
    assert.equal(loadConfig({ MASTER_KEY: Buffer.from(hex, 'hex').toString('base64') }).masterKey?.toString('hex'), hex);
  });

  it('generates the embedded master key once and keeps it', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'msgsvc-key-'));
    try {
      const config = loadConfig({ DATA_DIR: dir });
      const first = ensureMasterKey(config);
      assert.equal(first.length, 32);
      assert.deepEqual(ensureMasterKey(config), first);
      assert.equal(readFileSync(path.join(dir, 'master.key'), 'utf8').trim(), first.toString('hex'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
