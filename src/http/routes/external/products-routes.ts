import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { andThen } from '../../../core/awaitable.ts';
import type { Store } from '../../../core/ports.ts';
import { listProducts } from '../../../core/products/products-service.ts';
import { scoped } from '../../route-scopes.ts';
import { EXTERNAL_API_ERRORS, jsonResponse, problemResponses } from '../../schemas/common.ts';
import { PRODUCTS_EXAMPLE, ProductSchema, toWireProduct } from '../../schemas/products.ts';

/**
 * `GET /products`, the list-available-products endpoint: every product and its roles,
 * products sorted by name. Source: docs/contract.md Part B, Products.
 */
export async function productsRoutes(app: FastifyInstance, options: { store: Store }): Promise<void> {
  app.get('/products', {
    schema: {
      operationId: 'listProducts',
      summary: 'List available products and their roles',
      description:
        'The products users can hold roles in (`apps[].name`), sorted by name, each with its roles ' +
        '(`apps[].role`) in the order the operator defined them.',
      tags: ['products'],
      security: scoped('products:read'),
      response: {
        200: jsonResponse(
          'Every product and its roles.',
          Type.Object({ products: Type.Array(Type.Ref(ProductSchema), { description: 'Sorted by name.' }) }),
          { products: PRODUCTS_EXAMPLE },
        ),
        ...problemResponses(...EXTERNAL_API_ERRORS),
      },
    },
    // Not async: with the catalogue in memory the answer is sent without a promise (Fastify
    // sends what a handler returns); else the handler returns a promise, which Fastify awaits.
    handler: () => andThen(listProducts(options.store), (products) => ({ products: products.map(toWireProduct) })),
  });
}
