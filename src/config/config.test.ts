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

  for (const [env, variable] of [
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
