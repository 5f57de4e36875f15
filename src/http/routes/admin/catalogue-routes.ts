import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Store } from '../../../core/ports.ts';
import { Type } from '@sinclair/typebox';
import { deleteProduct, getProduct, listProducts, putProduct } from '../../../core/products/products-service.ts';
import { PutProductBody } from '../../schemas/admin.ts';
import { BODY_ERRORS, jsonResponse, problemResponses } from '../../schemas/common.ts';
import { ADMIN_PRODUCT_EXAMPLE, AdminProductSchema, PRODUCT_NAME_PATTERN, toAdminProduct } from '../../schemas/products.ts';
import { AUTH, adminActor, security, tags } from './admin-common.ts';

const ProductName = Type.String({ description: 'The product\'s name (case-sensitive).', examples: ['crm'] });
const ProductParams = Type.Object({ name: ProductName });

/**
 * Operator routes of the product catalogue: list, create or replace roles, get, remove. Source: docs/contract.md Part B, Products and Operator interface.
 */
export async function catalogueRoutes(app: FastifyInstance, options: { store: Store }): Promise<void> {
  const { store } = options;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.get('/products', {
    schema: {
      operationId: 'listCatalogueProducts',
      summary: 'List the product catalogue',
      description: 'Every product with its roles and timestamps, sorted by name.',
      tags,
      security,
      response: {
        200: jsonResponse(
          'The catalogue.',
          Type.Object({ products: Type.Array(AdminProductSchema, { description: 'Sorted by name.' }) }),
          { products: [ADMIN_PRODUCT_EXAMPLE] },
        ), ...problemResponses(...AUTH) },
    },
    handler: async () => ({ products: (await listProducts(store)).map(toAdminProduct) }),
  });

  api.put('/products/:name', {
    schema: {
      operationId: 'putCatalogueProduct',
      summary: 'Create a product or replace its roles',
      description:
        'Creates the product with these roles, or replaces the roles of an existing one (in the given order). ' +
        'Dropping a role an active user holds → `409 product_in_use`. Putting the same roles again changes nothing.',
      tags,
      security,
      params: Type.Object({
        name: Type.String({
          pattern: PRODUCT_NAME_PATTERN,
          description: 'The product\'s name: letters, digits and `._-`, 1-64 characters, case-sensitive.',
          examples: ['support'],
        }),
      }),
      body: PutProductBody,
      response: {
        200: jsonResponse('The product, its roles replaced (or unchanged).', AdminProductSchema, ADMIN_PRODUCT_EXAMPLE),
        201: jsonResponse('The product, created.', AdminProductSchema, ADMIN_PRODUCT_EXAMPLE),
        ...problemResponses(...AUTH, ...BODY_ERRORS, 'invalid_parameter', 'product_in_use'),
      },
    },
    handler: async (request, reply) => {
      const { product, created } = await putProduct(store, request.params.name, request.body.roles, adminActor(request));
      return reply.code(created ? 201 : 200).send(toAdminProduct(product));
    },
  });

  api.get('/products/:name', {
    schema: {
      operationId: 'getCatalogueProduct',
      summary: 'Get a product',
      description: 'The product with this name, its roles and timestamps.',
      tags,
      security,
      params: ProductParams,
      response: { 200: jsonResponse('The product.', AdminProductSchema, ADMIN_PRODUCT_EXAMPLE), ...problemResponses(...AUTH, 'product_not_found', 'invalid_parameter') },
    },
    handler: async (request) => toAdminProduct(await getProduct(store, request.params.name)),
  });

  api.delete('/products/:name', {
    schema: {
      operationId: 'deleteCatalogueProduct',
      summary: 'Remove a product (refused while an active user holds it)',
      description: 'Removes the product from the catalogue; refused with `409 product_in_use` while an active user holds one of its roles.',
      tags,
      security,
      params: ProductParams,
      response: { 204: { type: 'null', description: 'Removed.' }, ...problemResponses(...AUTH, 'product_not_found', 'product_in_use', 'invalid_parameter') },
    },
    handler: async (request, reply) => {
      await deleteProduct(store, request.params.name, adminActor(request));
      return reply.code(204).send();
    },
  });
}
