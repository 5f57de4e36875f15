import { createCipheriv, createDecipheriv, hash, randomBytes } from 'node:crypto';

/*
 * Secrets the server must be able to read back (a webhook signing key, an identity provider's
 * client secret, stream credentials) are stored encrypted with a key-encryption key
 * (docs/security.md, "Secrets at rest"): AES-256-GCM (NIST SP 800-38D) with a random 96-bit
 * nonce, in the text form `v1:<kid>:<base64(nonce ‖ ciphertext ‖ tag)>`. The key id names the
 * key that encrypted the value, so that a rotation can tell what is left to re-encrypt and a
 * server holding the old key as well as the new can read both.
 */

/** Bytes of a key-encryption key (AES-256). */
export const SECRETS_KEY_BYTES = 32;
/** The format version of an encrypted secret. */
const VERSION = 'v1';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** `v1:<8 hex>:<base64>`: the shape of an encrypted secret; anything else is a plaintext stored before encryption. */
const ENCRYPTED = /^v1:([0-9a-f]{8}):([A-Za-z0-9+/]+={0,2})$/;

/** One key-encryption key and its id (the first 8 hex digits of its SHA-256: names it, reveals nothing). */
export interface SecretsKey {
  readonly id: string;
  readonly key: Buffer;
}

/**
 * The keys a server holds: `current` encrypts every new secret; every key of the ring (the
 * current one and those being rotated away from) decrypts.
 */
export interface KeyRing {
  readonly current: SecretsKey;
  readonly all: ReadonlyMap<string, SecretsKey>;
}

/** A secret could not be decrypted: `code` says why (no key of the ring has its id, or it fails authentication). */
export class SecretDecryptionError extends Error {
  override readonly name = 'SecretDecryptionError';
  constructor(readonly code: 'secrets_key_unknown' | 'secret_corrupt' | 'secret_not_encrypted', message: string) {
    super(message);
  }
}

/** The id of `key`: the first 8 hex digits of its SHA-256. */
export function secretsKeyId(key: Buffer): string {
  return hash('sha256', key, 'hex').slice(0, 8);
}

/**
 * A key ring: `current` encrypts, `current` and each of `previous` decrypt.
 * @throws RangeError when a key is not {@link SECRETS_KEY_BYTES} bytes long.
 */
export function createKeyRing(current: Buffer, previous: readonly Buffer[] = []): KeyRing {
  const keys = [current, ...previous].map((key) => {
    if (key.length !== SECRETS_KEY_BYTES) throw new RangeError(`a secrets key must be ${SECRETS_KEY_BYTES} bytes, got ${key.length}`);
    return Object.freeze({ id: secretsKeyId(key), key });
  });
  return Object.freeze({ current: keys[0]!, all: new Map(keys.map((k) => [k.id, k])) });
}

/** A new random key-encryption key. */
export function generateSecretsKey(): Buffer {
  return randomBytes(SECRETS_KEY_BYTES);
}

/** The id of the key that encrypted `value`; undefined when `value` is not an encrypted secret (a plaintext). */
export function encryptedWith(value: string): string | undefined {
  return ENCRYPTED.exec(value)?.[1];
}

/** The authenticated prefix of a value encrypted by `kid`: version and key id cannot be swapped. */
const header = (kid: string) => `${VERSION}:${kid}`;

/**
 * Encrypts `plaintext` with the ring's current key: AES-256-GCM, a fresh random 96-bit nonce,
 * the `v1:<kid>` prefix as additional authenticated data. Returns `v1:<kid>:<base64>`.
 */
export function encryptSecret(ring: KeyRing, plaintext: string): string {
  const { id, key } = ring.current;
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(Buffer.from(header(id)));
  const body = Buffer.concat([nonce, cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return `${header(id)}:${body.toString('base64')}`;
}

/**
 * Decrypts a value {@link encryptSecret} made, with whichever key of the ring has its id.
 * @throws SecretDecryptionError `secret_not_encrypted` (not of the encrypted form),
 *   `secrets_key_unknown` (no key of the ring has its id: SECRETS_KEY, or SECRETS_KEY_PREVIOUS
 *   during a rotation, is not the key it was written with), `secret_corrupt` (altered, or not
 *   encrypted by that key).
 */
export function decryptSecret(ring: KeyRing, value: string): string {
  const match = ENCRYPTED.exec(value);
  if (!match) throw new SecretDecryptionError('secret_not_encrypted', 'the stored secret is not encrypted');
  const kid = match[1]!;
  const key = ring.all.get(kid);
  if (!key) {
    throw new SecretDecryptionError('secrets_key_unknown', `the stored secret is encrypted with key ${kid}, which is neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS of this server`);
  }
  const body = Buffer.from(match[2]!, 'base64');
  if (body.length < NONCE_BYTES + TAG_BYTES) throw new SecretDecryptionError('secret_corrupt', 'the stored secret is truncated');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key.key, body.subarray(0, NONCE_BYTES));
    decipher.setAAD(Buffer.from(header(kid)));
    decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
    return Buffer.concat([decipher.update(body.subarray(NONCE_BYTES, body.length - TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretDecryptionError('secret_corrupt', `the stored secret does not authenticate under key ${kid}`);
  }
}
