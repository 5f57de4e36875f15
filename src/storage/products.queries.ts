import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import type { Product, ProductRepository } from '../core/ports.ts';
import type { Database } from './database.ts';
import { products, userApps, users } from './schema.ts';

/** The product catalogue repository over Drizzle (global, not per workspace). */
export function createProductRepository(db: Database): ProductRepository {
  return {
    async findAll() {
      // Byte order (COLLATE "C"), so the sort is the same on every server locale.
      return db.select().from(products).orderBy(sql`${products.name} collate "C"`);
    },

    async findByNamesForShare(names) {
      // Every add runs this: one array parameter keeps the text, and so the named statement, the same.
      return db
        .select()
        .from(products)
        .where(sql`${products.name} = any(${sql.param([...names])}::text[])`)
        .for('share')
        .prepare('wum_products_for_share')
        .execute();
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
      return { product: product as Product, created };
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
  };
}
