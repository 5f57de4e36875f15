import { Type } from '@sinclair/typebox';
import type { Product } from '../../core/ports.ts';
import { Timestamp } from './common.ts';

/** Product and role names: letters, digits and `._-`, 1-64 characters, case-sensitive. */
export const PRODUCT_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$';

/** A product as the external API lists it (SPEC.md Part B, Products). */
export const ProductSchema = Type.Object(
  {
    name: Type.String({ examples: ['crm'] }),
    roles: Type.Array(Type.String(), { examples: [['admin', 'member']] }),
  },
  { $id: 'Product' },
);

/** A product as the admin API shows it, with timestamps. */
export const AdminProductSchema = Type.Object({
  name: Type.String(),
  roles: Type.Array(Type.String()),
  created_at: Timestamp,
  updated_at: Timestamp,
});

/** Domain product → external wire shape. */
export function toWireProduct(product: Product) {
  return { name: product.name, roles: [...product.roles] };
}

/** Domain product → admin wire shape. */
export function toAdminProduct(product: Product) {
  return { ...toWireProduct(product), created_at: product.createdAt, updated_at: product.updatedAt };
}
