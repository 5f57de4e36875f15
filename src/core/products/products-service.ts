import type { Actor } from '../actor.ts';
import { AppError } from '../errors.ts';
import type { Product, Store } from '../ports.ts';

/** Lists the catalogue, products sorted by name (SPEC.md Part B, Products). */
export async function listProducts(store: Store): Promise<Product[]> {
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

function inUse(name: string, roles: readonly string[]): AppError {
  return new AppError(
    'product_in_use',
    `Active users hold ${roles.map((r) => `"${r}"`).join(', ')} of product "${name}".`,
  );
}

/**
 * Creates a product or replaces its roles (in the given order). Dropping a role that an
 * active user holds is refused. The product row is locked for the check, and user adds
 * share-lock it, so the two cannot interleave. Putting the same roles again changes nothing
 * (no audit event, `updated_at` kept).
 * Source: SPEC.md Part B, Operator interface (`PUT /admin/v1/products/{name}`).
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
      const held = dropped.length > 0 ? await tx.products.findRolesHeldByActiveUsers(name, dropped) : [];
      if (held.length > 0) throw inUse(name, held);
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
 * @throws AppError `product_not_found` (404); `product_in_use` (409) while an active user holds it.
 */
export async function deleteProduct(store: Store, name: string, actor: Actor): Promise<void> {
  await store.transaction(async (tx) => {
    const before = await tx.products.findByName(name, { lock: true });
    if (!before) throw new AppError('product_not_found', `No product named "${name}".`);
    const held = await tx.products.findRolesHeldByActiveUsers(name);
    if (held.length > 0) throw inUse(name, held);
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
