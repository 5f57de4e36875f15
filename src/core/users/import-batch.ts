import type { Actor } from '../actor.ts';
import { AppError } from '../errors.ts';
import type { Repositories } from '../ports.ts';
import type { Product, ProductRepository } from '../products/product-repository.ts';
import type { UserChangeRecord } from './user-repository.ts';
import { assertAppsExist } from '../products/apps.ts';
import { foldEmail } from './email.ts';
import type { ImportRowResult, PendingImportRow } from './import-job.ts';
import type { UserWrite } from './user.ts';
import { changeRecord, newUserOf, reactivationOf, writeChange } from './users-service.ts';

/**
 * The catalogue's products a batch names, read once and share-locked until the batch commits,
 * served to {@link assertAppsExist} row after row so every row is checked (and refused with the
 * same problem) as `POST /users` checks it.
 */
async function batchCatalogue(products: ProductRepository, rows: readonly PendingImportRow[]): Promise<ProductRepository> {
  const names = [...new Set(rows.flatMap((r) => r.user.apps.map((a) => a.name)))];
  const locked: Product[] = names.length > 0 ? await products.findByNamesForShare(names) : [];
  return { ...products, findByNamesForShare: async (wanted) => locked.filter((p) => wanted.includes(p.name)) };
}

/** A row refused with `error`'s problem; anything but an AppError is a bug and propagates. */
function rejected(row: number, error: unknown): ImportRowResult {
  if (!(error instanceof AppError)) throw error;
  const fields = error.errors?.map((e) => `${e.field}: ${e.message}`).join('; ');
  return { row, outcome: 'rejected', code: error.code, detail: fields ? `${error.detail} (${fields})` : error.detail };
}

/**
 * Applies one batch of an import's rows in the caller's transaction, each row with the rules of
 * `POST /users` (docs/contract.md Part B, "Importing users in bulk"): a new email adds the user,
 * a deactivated user's email reactivates it, an active user's email is skipped
 * (`user_already_exists`), and a row the rules refuse (an unknown product or role, an expiry in
 * the past, an owner without `owners:write`) is rejected with the problem's code. Rows are
 * taken in file order, so a later row with the email of an earlier one is skipped once that one
 * added the user. The existing users are read (and locked) in one statement and the new users
 * inserted in one set-based statement with their audit entries and events; a reactivation is
 * the same write as `POST /users`'s. The last-owner rule cannot apply: an import never changes
 * an active user.
 * @returns each row's outcome, in file order.
 */
export async function importBatch(tx: Repositories, workspaceId: number, rows: readonly PendingImportRow[], actor: Actor): Promise<ImportRowResult[]> {
  const catalogue = await batchCatalogue(tx.products, rows);
  const existing = new Map((await tx.users.lockByEmails(workspaceId, rows.map((r) => r.email))).map((u) => [foldEmail(u.email), u]));
  const taken = new Set<string>();
  const results = new Map<number, ImportRowResult>();
  const inserts: Array<{ row: number; id: string; user: UserWrite; record: UserChangeRecord }> = [];
  for (const { row, user: input } of rows) {
    const key = foldEmail(input.email);
    const current = existing.get(key);
    if (taken.has(key) || current?.status === 'active') {
      results.set(row, { row, outcome: 'skipped', code: 'user_already_exists', detail: 'already active' });
      continue;
    }
    try {
      const user = newUserOf(input, actor);
      await assertAppsExist(catalogue, user.apps, 'user.apps');
      if (current) {
        const { next, action } = reactivationOf(current, input, user.apps);
        await writeChange({ ...tx, products: catalogue }, workspaceId, current, next, actor, action);
        results.set(row, { row, outcome: 'reactivated' });
      } else {
        const id = crypto.randomUUID();
        inserts.push({ row, id, user, record: changeRecord(workspaceId, actor, 'user.created', id, undefined, user) });
      }
      taken.add(key);
    } catch (error) {
      results.set(row, rejected(row, error));
    }
  }
  const inserted = inserts.length > 0 ? await tx.users.insertMany(workspaceId, inserts) : new Set<string>();
  for (const { row, id } of inserts) {
    // Not inserted: a concurrent add took the email after the batch read the users.
    results.set(row, inserted.has(id) ? { row, outcome: 'added' } : { row, outcome: 'skipped', code: 'user_already_exists', detail: 'already active' });
  }
  return rows.map((r) => results.get(r.row)!);
}
