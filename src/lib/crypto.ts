import {
  createCipheriv,
  createDecipheriv,
  createSecretKey,
  hash,
  randomBytes,
  scrypt as scryptCallback,
  timingSafeEqual,
  type KeyObject,
  type ScryptOptions,
} from 'node:crypto';

/**
 * Random bytes drawn from a pool of the CSPRNG's output, refilled 4 KiB at a time, every byte handed
 * out once. Each `randomBytes` call crosses into OpenSSL for a few µs whatever its size, and a send
 * made seven such calls (ids, the stored answer's token and IV, the provider's ids); Node pools the
 * entropy of `randomUUID` the same way.
 */
const RANDOM_POOL_SIZE = 4096;
let randomPool = randomBytes(RANDOM_POOL_SIZE);
let randomOffset = 0;

function drawRandom(size: number): Buffer {
  if (randomOffset + size > randomPool.length) {
    randomPool = randomBytes(Math.max(RANDOM_POOL_SIZE, size));
    randomOffset = 0;
  }
  const drawn = randomPool.subarray(randomOffset, randomOffset + size);
  randomOffset += size;
  return drawn;
}

/** `size` cryptographically random bytes, from the pool; the caller's own copy. */
export function pooledRandomBytes(size: number): Buffer {
  return Buffer.from(drawRandom(size));
}

/** A random number in [0, 1) with 8 bits of entropy, the source the ulid package asks once per character. */
export function pooledRandomFraction(): number {
  return drawRandom(1)[0]! / 256;
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * A uniformly random string over [0-9A-Za-z]. Rejection sampling keeps every character equally
 * likely (a plain `byte % 62` would favour the first eight characters).
 */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of drawRandom(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export function randomToken(bytes = 32): string {
  return drawRandom(bytes).toString('base64url');
}

export function sha256Hex(value: string | Buffer): string {
  // The one-shot form: no Hash object per call (0.25 µs against 0.62, measured), and every /v1
  // request hashes its credential.
  return hash('sha256', value, 'hex');
}

/** Compares two strings in time that depends only on their length, never on where they differ. */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  if (left.length !== right.length) {
    // Still spend the comparison so a length mismatch is not measurably faster.
    timingSafeEqual(left, left);
    return false;
  }
  return timingSafeEqual(left, right);
}

// scrypt parameters: N=2^15, r=8, p=1 (OWASP's recommended minimum), 32 MiB of memory per hash.
const SCRYPT = { N: 32768, r: 8, p: 1, keyLength: 32, maxmem: 64 * 1024 * 1024 } as const;
/** log2 of scrypt's N: the default cost of a new hash (`PASSWORD_HASH_COST`). */
export const DEFAULT_PASSWORD_HASH_COST = Math.log2(SCRYPT.N);

function scrypt(password: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scryptCallback(password, salt, keyLength, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

/**
 * `scrypt$N$r$p$salt$hash`, so that parameters can be raised later without breaking stored hashes.
 * `cost` is log2 of N; a hash verifies with the parameters it was made with, whatever the cost now.
 */
export async function hashPassword(password: string, cost = DEFAULT_PASSWORD_HASH_COST): Promise<string> {
  const salt = randomBytes(16);
  const N = 2 ** cost;
  const key = await scrypt(password, salt, SCRYPT.keyLength, { ...SCRYPT, N });
  return ['scrypt', N, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await scrypt(password, Buffer.from(salt, 'base64url'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: SCRYPT.maxmem,
  });
  return timingSafeEqual(actual, expected);
}

/**
 * Authenticated encryption for secrets the service must read back later (webhook signing secrets,
 * provider tokens, connector credentials). Output: `v1.<iv>.<tag>.<ciphertext>`, base64url parts.
 * `aad` (additional authenticated data, such as the id of the record the secret belongs to) binds a
 * sealed value to its owner: opened with any other `aad`, it fails instead of answering.
 */
export class SecretBox {
  /**
   * Made once: a cipher given the raw key imports it into OpenSSL on every call (about 30 µs a seal
   * measured here, against 8 µs with a key object), and sealing and opening are on hot paths (every
   * idempotent answer, every provider token read).
   */
  readonly #key: KeyObject;

  constructor(masterKey: Buffer) {
    if (masterKey.length !== 32) throw new Error('the master key must be 32 bytes');
    this.#key = createSecretKey(masterKey);
  }

  seal(plaintext: string, aad?: string): string {
    const iv = pooledRandomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    if (aad !== undefined) cipher.setAAD(Buffer.from(aad, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
  }

  open(sealed: string, aad?: string): string {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('not a sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    if (aad !== undefined) decipher.setAAD(Buffer.from(aad, 'utf8'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }
}
