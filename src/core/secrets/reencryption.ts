/*
 * A pass over the stored secrets (`Store.reencryptSecrets`, core/ports.ts): what it re-encrypts and
 * what it reports (docs/operations.md, "Rotating the secrets key").
 */

/**
 * Which stored secrets a pass re-encrypts: `plaintext`, those stored before encryption (at
 * start); `not-current`, every one not encrypted with the current key (a rotation).
 */
export type ReencryptionScope = 'plaintext' | 'not-current';

/**
 * What a pass over the stored secrets did: the id of the key they are now encrypted with, how
 * many it (re-)encrypted, and how many no key of the server could decrypt (left as they were).
 */
export interface ReencryptionReport {
  readonly keyId: string;
  readonly reencrypted: number;
  readonly undecryptable: number;
}
