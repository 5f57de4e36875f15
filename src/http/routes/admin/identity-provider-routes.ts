import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import {
  getIdentityProvider,
  removeIdentityProvider,
  setIdentityProvider,
  testIdentityProvider,
  type IdentityProviderCheck,
  type IdentityProviderView,
} from '../../../core/identity-providers/identity-providers-service.ts';
import type { Store } from '../../../core/ports.ts';
import { OIDC_CALLBACK_PATH } from '../../oidc/oidc-routes.ts';
import { BODY_ERRORS, Timestamp, jsonResponse, problemResponses } from '../../schemas/common.ts';
import type { RouteMount } from '../route-mount.ts';

/** Body of `PUT …/identity-provider`. */
const IdentityProviderBody = Type.Object(
  {
    issuer: Type.String({
      pattern: '^https?://[^\\s/?#]+[^\\s?#]*$',
      maxLength: 2048,
      description: 'The OpenID Provider\'s issuer URL; its discovery document is at `{issuer}/.well-known/openid-configuration`.',
    }),
    client_id: Type.String({ minLength: 1, maxLength: 512, description: 'The client id registered at the provider for this workspace\'s console.' }),
    client_secret: Type.String({ minLength: 1, maxLength: 1024, description: 'The client\'s secret. Stored, never returned.' }),
  },
  {
    additionalProperties: false,
    examples: [{ issuer: 'https://login.acme.example', client_id: 'wum-console', client_secret: 'the-secret-from-the-provider' }],
  },
);

/** A workspace's identity provider on the wire: never its client secret. */
const IdentityProviderSchema = Type.Object(
  {
    issuer: Type.String({ description: 'The OpenID Provider\'s issuer URL.' }),
    client_id: Type.String({ description: 'The client id at the provider.' }),
    client_secret_set: Type.Boolean({ description: 'Always true: a secret is stored; it is never returned.' }),
    redirect_path: Type.String({ description: 'Path of the redirect URI to register at the provider, on the workspace\'s host.' }),
    revision: Type.String({ format: 'uuid', description: 'Changes with every change; console sessions opened under another revision are over.' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { description: 'The OpenID Connect identity provider people of the workspace sign in to the console with.' },
);


const example = {
  issuer: 'https://login.acme.example',
  client_id: 'wum-console',
  client_secret_set: true,
  redirect_path: OIDC_CALLBACK_PATH,
  revision: '6a1f0c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b',
  created_at: '2026-01-10T09:00:00.000Z',
  updated_at: '2026-01-10T09:00:00.000Z',
};

const toWire = (p: IdentityProviderView) => ({
  issuer: p.issuer,
  client_id: p.clientId,
  client_secret_set: true,
  redirect_path: OIDC_CALLBACK_PATH,
  revision: p.revision,
  created_at: p.createdAt,
  updated_at: p.updatedAt,
});

/**
 * Routes of a workspace's identity provider (docs/api.md, "Identity provider"): set (create or
 * replace, after testing the provider's discovery), show without the secret, remove; mounted in
 * the operator API and, for the scope `sso:write`, in the workspace's own (docs/api.md,
 * "Self-service"). Every change is audited and ends the sessions of the people who signed in
 * with the previous configuration.
 */
export async function identityProviderRoutes(app: FastifyInstance, options: { store: Store; check: IdentityProviderCheck; mount: RouteMount }): Promise<void> {
  const { store, check, mount } = options;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const PATH = `${mount.base}/identity-provider`;
  const security = mount.security('sso:write');
  const tags = mount.tags('identity-provider');
  const params = Type.Object(mount.params);

  api.put(PATH, {
    schema: {
      operationId: mount.pick('setIdentityProvider', 'setOwnIdentityProvider'),
      summary: 'Set the workspace\'s identity provider',
      description:
        'Creates or replaces the OpenID Connect provider whose people (active owners of the workspace, by email) sign in ' +
        'to the console. Register `https://{subdomain}.<base domain>' + OIDC_CALLBACK_PATH + '` as the redirect URI. ' +
        'The issuer\'s discovery document is fetched and checked first, through the server\'s outbound guard (https; ' +
        'no private, loopback, link-local or metadata address unless the operator allows that network; no redirects): ' +
        'when it cannot be used the answer is `422` with a code naming why, and nothing is stored. ' +
        'A change ends the sessions opened with the previous configuration. The secret is never returned.',
      tags,
      security,
      params,
      body: IdentityProviderBody,
      response: {
        200: jsonResponse('The configuration replaced.', IdentityProviderSchema, example),
        201: jsonResponse('The configuration created.', IdentityProviderSchema, example),
        ...problemResponses(
          ...mount.errors,
          ...BODY_ERRORS,
          'identity_provider_unreachable',
          'identity_provider_address_refused',
          'identity_provider_http_refused',
          'identity_provider_discovery_invalid',
          'identity_provider_issuer_mismatch',
        ),
      },
    },
    handler: async (request, reply) => {
      const { issuer, client_id, client_secret } = request.body;
      const { provider, created } = await setIdentityProvider(
        store,
        mount.subdomain(request),
        { issuer, clientId: client_id, clientSecret: client_secret },
        mount.actor(request),
        check,
      );
      return reply.code(created ? 201 : 200).send(toWire(provider));
    },
  });

  api.get(PATH, {
    schema: {
      operationId: mount.pick('getIdentityProvider', 'getOwnIdentityProvider'),
      summary: 'Show the workspace\'s identity provider',
      description: 'The configuration, without the client secret.',
      tags,
      security,
      params,
      response: {
        200: jsonResponse('The configuration.', IdentityProviderSchema, example),
        ...problemResponses(...mount.errors, 'identity_provider_not_found'),
      },
    },
    handler: async (request) => toWire(await getIdentityProvider(store, mount.subdomain(request))),
  });

  api.delete(PATH, {
    schema: {
      operationId: mount.pick('deleteIdentityProvider', 'deleteOwnIdentityProvider'),
      summary: 'Remove the workspace\'s identity provider',
      description: 'Its people\'s console sessions end; the console offers the key sign-in again unless the server forbids it.',
      tags,
      security,
      params,
      response: {
        204: { type: 'null', description: 'Removed.' },
        ...problemResponses(...mount.errors, 'identity_provider_not_found'),
      },
    },
    handler: async (request, reply) => {
      await removeIdentityProvider(store, mount.subdomain(request), mount.actor(request));
      return reply.code(204).send();
    },
  });

  api.post(`${PATH}/test`, {
    schema: {
      operationId: mount.pick('testIdentityProvider', 'testOwnIdentityProvider'),
      summary: 'Test the workspace\'s identity provider',
      description:
        'Fetches and checks the stored provider\'s discovery document again, as setting it did, and changes nothing: ' +
        '`200` with the configuration when it can be used now, else `422` with a code naming why.',
      tags,
      security,
      params,
      response: {
        200: jsonResponse('The provider answered as it must; the configuration, without the secret.', IdentityProviderSchema, example),
        ...problemResponses(
          ...mount.errors,
          'identity_provider_not_found',
          'identity_provider_unreachable',
          'identity_provider_address_refused',
          'identity_provider_http_refused',
          'identity_provider_discovery_invalid',
          'identity_provider_issuer_mismatch',
        ),
      },
    },
    handler: async (request) => toWire(await testIdentityProvider(store, mount.subdomain(request), check)),
  });
}
