import { sql, type SQL } from 'drizzle-orm';
import { decryptSecret, encryptSecret, encryptedWith, type KeyRing } from '../core/secrets/secret-box.ts';
import type { ReencryptionReport, ReencryptionScope } from '../core/secrets/reencryption.ts';
import type { Database } from './database.ts';
import { rowCount, rowsOf } from './rows.ts';

/*
 * Every column that holds a secret encrypted at rest (docs/security.md, "Secrets at rest"),
 * with the primary key that names its rows. A new kind of stored secret (the credentials of an
 * audit stream) is one more entry here: the start-up encryption of plaintext rows and the key
 * rotation then cover it.
 */

/** A column of secrets, and the primary key columns (with their types) of its table. */
interface SecretColumn {
  readonly table: string;
  readonly column: string;
  readonly key: readonly { readonly name: string; readonly type: 'int8' | 'uuid' }[];
}

const WEBHOOK_ENDPOINT_KEY = [{ name: 'workspace_id', type: 'int8' }, { name: 'id', type: 'uuid' }] as const;

/** The columns of secrets, in the order they are processed. */
export const SECRET_COLUMNS: readonly SecretColumn[] = [
  { table: 'webhook_endpoints', column: 'secret', key: WEBHOOK_ENDPOINT_KEY },
  { table: 'webhook_endpoints', column: 'previous_secret', key: WEBHOOK_ENDPOINT_KEY },
  { table: 'workspace_identity_providers', column: 'client_secret', key: [{ name: 'workspace_id', type: 'int8' }] },
  { table: 'audit_streams', column: 'credentials', key: [{ name: 'id', type: 'uuid' }] },
];

/** Rows read per statement: a pass holds no lock and no transaction across batches. */
const BATCH_SIZE = 200;

/**
 * (Re-)encrypts with `ring`'s current key every stored secret `scope` selects, column by
 * column, in batches of {@link BATCH_SIZE} rows in primary-key order. Each row is written by a
 * conditional UPDATE (only while it still holds the value read), so a pass never undoes a
 * change made meanwhile, and several replicas running it at once each write a row at most once
 * between them; running it again finds nothing to do. A value no key of the ring decrypts is
 * counted and left as it was. Source: docs/operations.md, "Rotating the secrets key".
 * @throws the database error of a failed statement (what was written before stays written).
 */
export async function reencryptSecrets(db: Database, ring: KeyRing, scope: ReencryptionScope): Promise<ReencryptionReport> {
  let reencrypted = 0;
  let undecryptable = 0;
  for (const target of SECRET_COLUMNS) {
    const column = sql.identifier(target.column);
    const keyList = sql.join(target.key.map((k) => sql.identifier(k.name)), sql`, `);
    const selects =
      scope === 'plaintext' ? sql`${column} !~ '^v1:[0-9a-f]{8}:'` : sql`${column} not like ${`v1:${ring.current.id}:%`}`;
    let after: SQL = sql``;
    for (;;) {
      const rows = rowsOf<Record<string, string>>(
        await db.execute(sql`select ${keyList}, ${column} as value from ${sql.identifier(target.table)}
          where ${column} is not null and ${selects} ${after} order by ${keyList} limit ${BATCH_SIZE}`),
      );
      for (const row of rows) {
        const stored = row.value!;
        let plaintext: string;
        try {
          plaintext = encryptedWith(stored) === undefined ? stored : decryptSecret(ring, stored);
        } catch {
          undecryptable += 1;
          continue;
        }
        const written = await db.execute(sql`update ${sql.identifier(target.table)} set ${column} = ${encryptSecret(ring, plaintext)}
          where ${keyEquals(target, row)} and ${column} = ${stored}`);
        reencrypted += rowCount(written);
      }
      if (rows.length < BATCH_SIZE) break;
      const last = rows[rows.length - 1]!;
      after = sql`and (${keyList}) > (${sql.join(target.key.map((k) => typed(last, k)), sql`, `)})`;
    }
  }
  return { keyId: ring.current.id, reencrypted, undecryptable };
}

/** A key column's value of `row`, cast to its type. */
const typed = (row: Record<string, string>, k: SecretColumn['key'][number]) => sql`${String(row[k.name])}::${sql.raw(k.type)}`;

/** `key1 = v1 and key2 = v2 …` for the primary key of `row`. */
function keyEquals(target: SecretColumn, row: Record<string, string>): SQL {
  return sql.join(target.key.map((k) => sql`${sql.identifier(k.name)} = ${typed(row, k)}`), sql` and `);
}
