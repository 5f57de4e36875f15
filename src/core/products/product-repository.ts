import type { Awaitable } from '../awaitable.ts';

/*
 * The product catalogue as the domain stores it: the product and its port (storage/products.queries.ts
 * implements it).
 */

/** A product of the catalogue with its roles in the operator's order. */
export interface Product {
  readonly name: string;
  readonly roles: readonly string[];
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** The global product catalogue. */
export interface ProductRepository {
  /** All products sorted by name: at once (no promise) when held in memory, else a promise of them. */
  findAll(): Awaitable<Product[]>;
  /** The named products, share-locked until commit so they cannot be removed meanwhile. */
  findByNamesForShare(names: readonly string[]): Promise<Product[]>;
  /** One product, optionally locked for update. */
  findByName(name: string, options?: { lock?: boolean }): Promise<Product | undefined>;
  /** Creates or replaces a product's roles; `created` tells which. */
  upsert(name: string, roles: readonly string[]): Promise<{ product: Product; created: boolean }>;
  /** Deletes a product. */
  delete(name: string): Promise<void>;
  /** Of the given roles of a product, those an active user of any workspace holds. */
  findRolesHeldByActiveUsers(product: string, roles?: readonly string[]): Promise<string[]>;
  /** Of the given roles of a product, those a workspace has linked as a SCIM group. */
  findRolesLinkedAsGroups(product: string, roles?: readonly string[]): Promise<string[]>;
}
