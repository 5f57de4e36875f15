import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import type { ProductRepository } from '../core/products/product-repository.ts';
import type { Database } from './database.ts';
import { NamedStatement, ph } from './named-statement.ts';
import { products, scimGroups, userApps, users } from './schema.ts';

/** A products row as the drivers return it from a NamedStatement (timestamps as text). */
interface ProductRow {
  name: string;
  roles: string[];
  created_at: string;
  updated_at: string;
}

/** Every add share-locks the products it names: one array parameter keeps one statement text. */
const productsForShare = new NamedStatement(
  'wum_products_for_share',
  () => sql`select name, roles, created_at, updated_at from products where name = any(${ph('names')}::text[]) for share`,
);

/** The product catalogue repository over Drizzle (global, not per workspace). */
export function createProductRepository(db: Database): ProductRepository {
  return {
    async findAll() {
      // Byte order (COLLATE "C"), so the sort is the same on every server locale.
      return db.select().from(products).orderBy(sql`${products.name} collate "C"`);
    },

    async findByNamesForShare(names) {
      const rows = await productsForShare.run<ProductRow>(db, { names: [...names] });
      return rows.map((row) => ({
        name: row.name,
        roles: row.roles,
        createdAt: new Date(row.created_at),
        updatedAt: new Date(row.updated_at),
      }));
    },

    async findByName(name, options) {
      const query = db.select().from(products).where(eq(products.name, name));
      const [row] = options?.lock ? await query.for('update') : await query;
      return row;
    },

    async upsert(name, roles) {
      // xmax = 0 only on a freshly inserted row: tells created from replaced in one statement.
      const [row] = await db
        .insert(products)
        .values({ name, roles: [...roles] })
        .onConflictDoUpdate({ target: products.name, set: { roles: [...roles], updatedAt: sql`now()` } })
        .returning({
          name: products.name,
          roles: products.roles,
          createdAt: products.createdAt,
          updatedAt: products.updatedAt,
          created: sql<boolean>`(xmax = 0)`,
        });
      const { created, ...product } = row!;
      return { product: product, created };
    },

    async delete(name) {
      await db.delete(products).where(eq(products.name, name));
    },

    async findRolesHeldByActiveUsers(product, roles) {
      const rows = await db
        .selectDistinct({ role: userApps.role })
        .from(userApps)
        .innerJoin(users, and(eq(users.workspaceId, userApps.workspaceId), eq(users.id, userApps.userId)))
        .where(
          and(
            eq(userApps.product, product),
            roles ? inArray(userApps.role, [...roles]) : undefined,
            eq(users.status, 'active'),
          ),
        )
        .orderBy(asc(userApps.role));
      return rows.map((r) => r.role);
    },

    async findRolesLinkedAsGroups(product, roles) {
      const rows = await db
        .selectDistinct({ role: scimGroups.role })
        .from(scimGroups)
        .where(and(eq(scimGroups.product, product), roles ? inArray(scimGroups.role, [...roles]) : undefined))
        .orderBy(asc(scimGroups.role));
      return rows.map((r) => r.role);
    },
  };
}
