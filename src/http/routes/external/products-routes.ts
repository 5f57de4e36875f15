import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Store } from '../../../core/ports.ts';
import { listProducts } from '../../../core/products/products-service.ts';
import { rejectOtherMethods } from '../../method-not-allowed.ts';
import { problemResponses } from '../../schemas/common.ts';
import { ProductSchema, toWireProduct } from '../../schemas/products.ts';

/**
 * `GET /products`, the list-available-products endpoint: every product and its roles,
 * products sorted by name. Source: SPEC.md Part B, Products.
 */
export async function productsRoutes(app: FastifyInstance, options: { store: Store }): Promise<void> {
  app.get('/products', {
    schema: {
      summary: 'List available products and their roles',
      tags: ['products'],
      response: {
        200: Type.Object({ products: Type.Array(Type.Ref(ProductSchema)) }),
        ...problemResponses('workspace_not_found', 'missing_api_key', 'invalid_api_key', 'rate_limited'),
      },
    },
    handler: async () => ({ products: (await listProducts(options.store)).map(toWireProduct) }),
  });
  rejectOtherMethods(app, '/products', ['GET']);
}
