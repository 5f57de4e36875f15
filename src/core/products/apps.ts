import { AppError, type FieldError } from '../errors.ts';
import type { ProductRepository } from './product-repository.ts';
import type { AppRole } from '../users/user.ts';

/**
 * Collapses exact duplicate `{name, role}` pairs, keeping the first occurrence's order (and its
 * `expiresAt`), each in one shape: `expiresAt` only on a grant that ends.
 * Source: docs/contract.md Part B, Users ("Exact duplicate pairs collapse into one").
 */
export function dedupeApps(apps: readonly AppRole[]): AppRole[] {
  const seen = new Set<string>();
  return apps.filter((app) => {
    const key = JSON.stringify([app.name, app.role]);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  }).map((app) => (app.expiresAt ? { name: app.name, role: app.role, expiresAt: app.expiresAt } : { name: app.name, role: app.role }));
}

/**
 * Whether the catalogue `products.findAll()` returns (in the service, a cached read) has
 * every app's product and role. Only a hint: the writer checks again under a lock.
 */
export async function appsInCatalogue(products: ProductRepository, apps: readonly AppRole[]): Promise<boolean> {
  if (apps.length === 0) return true;
  const catalogue = new Map((await products.findAll()).map((p) => [p.name, p.roles]));
  return apps.every((app) => catalogue.get(app.name)?.includes(app.role) ?? false);
}

/**
 * Checks every app against the catalogue, share-locking the products it names so they
 * cannot be removed before the caller's transaction commits.
 *
 * @param apps - the requested product roles; `fieldPath` prefixes each error's field.
 * @param skip - apps not to check (e.g. roles a user already holds), still counted in the
 *   indexes of the error fields.
 * @throws AppError `unknown_product` (422) when a product does not exist, else
 *   `unknown_product_role` (422) when a role is not one of its product's roles; `errors`
 *   names every offending field, e.g. `user.apps[1].role`.
 */
export async function assertAppsExist(
  products: ProductRepository,
  apps: readonly AppRole[],
  fieldPath: string,
  skip: (app: AppRole) => boolean = () => false,
): Promise<void> {
  const checked = apps.filter((app) => !skip(app));
  if (checked.length === 0) return;
  const names = [...new Set(checked.map((a) => a.name))];
  const catalogue = new Map((await products.findByNamesForShare(names)).map((p) => [p.name, p.roles]));
  const unknownProducts: FieldError[] = [];
  const unknownRoles: FieldError[] = [];
  apps.forEach((app, i) => {
    if (skip(app)) return;
    const roles = catalogue.get(app.name);
    if (!roles) {
      unknownProducts.push({ field: `${fieldPath}[${i}].name`, message: `unknown product "${app.name}"` });
    } else if (!roles.includes(app.role)) {
      unknownRoles.push({
        field: `${fieldPath}[${i}].role`,
        message: `"${app.role}" is not a role of product "${app.name}" (roles: ${roles.join(', ')})`,
      });
    }
  });
  if (unknownProducts.length > 0) {
    throw new AppError('unknown_product', 'One or more products do not exist.', unknownProducts);
  }
  if (unknownRoles.length > 0) {
    throw new AppError('unknown_product_role', 'One or more roles do not exist in their product.', unknownRoles);
  }
}
