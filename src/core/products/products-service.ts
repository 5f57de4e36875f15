import type { Actor } from '../actor.ts';
import type { Awaitable } from '../awaitable.ts';
import { AppError } from '../errors.ts';
import type { Repositories, Store } from '../ports.ts';
import type { Product } from './product-repository.ts';

/**
 * Lists the catalogue, products sorted by name (docs/contract.md Part B, Products): at once
 * when the store holds it in memory, else a promise of it.
 */
export function listProducts(store: Store): Awaitable<Product[]> {
  return store.products.findAll();
}

/**
 * Finds one product by its case-sensitive name.
 * @throws AppError `product_not_found` (404).
 */
export async function getProduct(store: Store, name: string): Promise<Product> {
  const product = await store.products.findByName(name);
  if (!product) throw new AppError('product_not_found', `No product named "${name}".`);
  return product;
}

/**
 * Refuses to drop roles of product `name` that active users hold or that a workspace has
 * linked as a SCIM group (its identity provider would then push members of a role that no
 * longer exists).
 * @throws AppError `product_in_use` (409) naming the roles and why.
 */
async function assertNotInUse(tx: Repositories, name: string, roles?: readonly string[]): Promise<void> {
  const held = await tx.products.findRolesHeldByActiveUsers(name, roles);
  const linked = await tx.products.findRolesLinkedAsGroups(name, roles);
  if (held.length === 0 && linked.length === 0) return;
  const list = (r: readonly string[]) => r.map((role) => `"${role}"`).join(', ');
  const reasons = [
    ...(held.length > 0 ? [`active users hold ${list(held)}`] : []),
    ...(linked.length > 0 ? [`SCIM groups link ${list(linked)}`] : []),
  ];
  throw new AppError('product_in_use', `Product "${name}" is in use: ${reasons.join('; ')}.`);
}

/**
 * Creates a product or replaces its roles (in the given order). Dropping a role that an
 * active user holds, or that a workspace linked as a SCIM group, is refused. The product row is locked for the check, and user adds
 * share-lock it, so the two cannot interleave. Putting the same roles again changes nothing
 * (no audit event, `updated_at` kept).
 * Source: docs/contract.md Part B, Operator interface (`PUT /admin/v1/products/{name}`).
 *
 * @param roles - at least one, no duplicates (validated by the caller's schema).
 * @throws AppError `product_in_use` (409).
 */
export async function putProduct(
  store: Store,
  name: string,
  roles: readonly string[],
  actor: Actor,
): Promise<{ product: Product; created: boolean }> {
  return store.transaction(async (tx) => {
    const before = await tx.products.findByName(name, { lock: true });
    if (before && before.roles.length === roles.length && before.roles.every((r, i) => r === roles[i])) {
      return { product: before, created: false };
    }
    if (before) {
      const dropped = before.roles.filter((r) => !roles.includes(r));
      if (dropped.length > 0) await assertNotInUse(tx, name, dropped);
    }
    const result = await tx.products.upsert(name, roles);
    await tx.audit.append({
      workspaceId: null,
      actor,
      action: result.created ? 'product.created' : 'product.updated',
      targetType: 'product',
      targetId: name,
      before: before ? { name: before.name, roles: before.roles } : null,
      after: { name, roles },
    });
    return result;
  });
}

/**
 * Removes a product from the catalogue.
 * @throws AppError `product_not_found` (404); `product_in_use` (409) while an active user holds
 *   it or a workspace has linked one of its roles as a SCIM group.
 */
export async function deleteProduct(store: Store, name: string, actor: Actor): Promise<void> {
  await store.transaction(async (tx) => {
    const before = await tx.products.findByName(name, { lock: true });
    if (!before) throw new AppError('product_not_found', `No product named "${name}".`);
    await assertNotInUse(tx, name);
    await tx.products.delete(name);
    await tx.audit.append({
      workspaceId: null,
      actor,
      action: 'product.deleted',
      targetType: 'product',
      targetId: name,
      before: { name: before.name, roles: before.roles },
      after: null,
    });
  });
}
