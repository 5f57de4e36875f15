import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../config/load-config.ts';
import { createKeyRing, generateSecretsKey, secretsKeyId, type KeyRing } from '../core/secrets/secret-box.ts';

/** The embedded store's key file, in its data directory (docs/operations.md, "The secrets key"). */
export const SECRETS_KEY_FILE = 'wum-secrets.key';

/** The key ring of this process and, for the log, where its current key came from. */
export interface OpenedKeyRing {
  readonly ring: KeyRing;
  /** `SECRETS_KEY`, or the key file of the embedded store (`created` when this start wrote it). */
  readonly source: { readonly kind: 'environment' } | { readonly kind: 'file'; readonly path: string; readonly created: boolean };
}

/** Reads the key file at `path`, or undefined when there is none. @throws when it exists but holds no 32-byte base64 key. */
async function readKeyFile(path: string): Promise<Buffer | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== 32) throw new Error(`${path} does not hold a secrets key (32 bytes in base64); restore it from its backup`);
  return key;
}

/**
 * The keys that encrypt and decrypt stored secrets (docs/security.md, "Secrets at rest"):
 * `SECRETS_KEY` (then `SECRETS_KEY_PREVIOUS`) when set; otherwise, on the embedded store, the
 * key kept in its data directory ({@link SECRETS_KEY_FILE}, mode 0600), generated on the
 * first start. On the embedded store the file's key also decrypts while `SECRETS_KEY` is set,
 * so moving from the file to the variable needs only a rotation.
 * @throws Error when there is no key to use (PostgreSQL or an in-memory store without
 *   `SECRETS_KEY`), or the key file is unreadable or malformed.
 */
export async function openKeyRing(config: Config): Promise<OpenedKeyRing> {
  const { key, previousKey } = config.secrets;
  const previous = previousKey ? [previousKey] : [];
  if (config.storage.kind !== 'pglite') {
    if (!key) throw new Error('SECRETS_KEY is required: it encrypts the secrets stored in the database');
    return { ring: createKeyRing(key, previous), source: { kind: 'environment' } };
  }
  const path = join(config.storage.dataDir, SECRETS_KEY_FILE);
  const fromFile = await readKeyFile(path);
  if (key) {
    const extra = fromFile && !previous.some((k) => k.equals(fromFile)) && secretsKeyId(fromFile) !== secretsKeyId(key) ? [fromFile] : [];
    return { ring: createKeyRing(key, [...previous, ...extra]), source: { kind: 'environment' } };
  }
  if (fromFile) return { ring: createKeyRing(fromFile), source: { kind: 'file', path, created: false } };
  const generated = generateSecretsKey();
  // `wx`: never overwrite a key another start wrote meanwhile; the mode keeps it from other users.
  await writeFile(path, `${generated.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  return { ring: createKeyRing(generated), source: { kind: 'file', path, created: true } };
}
