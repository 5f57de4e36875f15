import { Type } from '@sinclair/typebox';
import type { Product } from '../../core/products/product-repository.ts';
import { Timestamp } from './common.ts';

/** Product and role names: letters, digits and `._-`, 1-64 characters, case-sensitive. */
export const PRODUCT_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$';

/** A product as the external API lists it (docs/contract.md Part B, Products). */
export const ProductSchema = Type.Object(
  {
    name: Type.String({ description: 'Product name (case-sensitive), used in `apps[].name`.', examples: ['crm'] }),
    roles: Type.Array(Type.String(), {
      description: 'The product\'s roles, in the order the operator defined them; used in `apps[].role`.',
      examples: [['admin', 'member']],
    }),
  },
  { $id: 'Product', description: 'A product users can hold roles in.' },
);

/** The catalogue of the OpenAPI document's examples (the demo workspace's). */
export const PRODUCTS_EXAMPLE = [
  { name: 'analytics', roles: ['editor', 'viewer'] },
  { name: 'crm', roles: ['admin', 'member'] },
  { name: 'helpdesk', roles: ['agent', 'supervisor'] },
];

/** A product as the admin API shows it, with timestamps. */
export const AdminProductSchema = Type.Object(
  {
    name: Type.String({ description: 'Product name (case-sensitive).' }),
    roles: Type.Array(Type.String(), { description: 'Its roles, in display order.' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { description: 'A product of the catalogue.' },
);

/** An admin product of the OpenAPI document's examples. */
export const ADMIN_PRODUCT_EXAMPLE = {
  name: 'crm',
  roles: ['admin', 'member'],
  created_at: '2025-01-15T09:00:00.000Z',
  updated_at: '2025-01-15T09:00:00.000Z',
};

/** Domain product → external wire shape. */
export function toWireProduct(product: Product) {
  return { name: product.name, roles: [...product.roles] };
}

/** Domain product → admin wire shape. */
export function toAdminProduct(product: Product) {
  return { ...toWireProduct(product), created_at: product.createdAt, updated_at: product.updatedAt };
}
