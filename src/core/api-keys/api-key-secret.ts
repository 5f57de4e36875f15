import { createHash, hash, randomBytes, timingSafeEqual } from 'node:crypto';

/** The recognisable prefix of every wum API key (docs/contract.md Part B, Authentication). */
export const API_KEY_PREFIX = 'wum_';

/** How many characters of a key are kept in clear as its `prefix`, to tell keys apart. */
const DISPLAY_PREFIX_LENGTH = API_KEY_PREFIX.length + 8;

/** A freshly generated key: the plaintext (shown once), its display prefix and its hash. */
export interface GeneratedApiKey {
  readonly key: string;
  readonly prefix: string;
  readonly hash: string;
}

/**
 * Hashes a presented API key for look-up: SHA-256, hex. A fast hash is right here because
 * keys carry 256 bits of entropy; a slow password hash would only slow every request.
 */
export function hashApiKey(key: string): string {
  // The one-shot `hash` builds no Hash object: about half the time of createHash (Node ≥ 20.12).
  return hash('sha256', key, 'hex');
}

/**
 * Generates an API key: `wum_` + 32 random bytes in base64url (43 characters, 256 bits).
 * Source: docs/contract.md Part B, Authentication (≥ 32 bytes of entropy, recognisable prefix).
 */
export function generateApiKey(): GeneratedApiKey {
  const key = API_KEY_PREFIX + randomBytes(32).toString('base64url');
  return { key, prefix: key.slice(0, DISPLAY_PREFIX_LENGTH), hash: hashApiKey(key) };
}

/** Compares two secrets in constant time (for equal lengths; length itself is not secret). */
export function secretsEqual(a: string, b: string): boolean {
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right) && a.length === b.length;
}
