import { DEFAULT_COUNT, MAX_COUNT, URN } from './constants.ts';
import { schemaDocuments, USER_EXTENSIONS } from './schema-definitions.ts';

/*
 * The discovery documents of RFC 7644 §4 (`/ServiceProviderConfig`, `/ResourceTypes`,
 * `/Schemas`, described in RFC 7643 §5–7). `baseUrl` is the absolute SCIM base of the
 * workspace, e.g. `https://acme.example.com/scim/v2`.
 */

/** What wum's SCIM service supports (RFC 7643 §5). */
export function serviceProviderConfig(baseUrl: string): Record<string, unknown> {
  return {
    schemas: [URN.serviceProviderConfig],
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_COUNT },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: true },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'Bearer token',
        description: `An API key of the workspace, sent as Authorization: Bearer <key>. Lists return ${DEFAULT_COUNT} resources unless count says otherwise.`,
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${baseUrl}/ServiceProviderConfig` },
  };
}

/** The resource types: User (with the enterprise and wum extensions) and Group (RFC 7643 §6). */
export function resourceTypes(baseUrl: string): Record<string, unknown>[] {
  return [
    {
      schemas: [URN.resourceType],
      id: 'User',
      name: 'User',
      endpoint: '/Users',
      description: 'User Account',
      schema: URN.user,
      schemaExtensions: USER_EXTENSIONS.map((schema) => ({ schema, required: false })),
      meta: { resourceType: 'ResourceType', location: `${baseUrl}/ResourceTypes/User` },
    },
    {
      schemas: [URN.resourceType],
      id: 'Group',
      name: 'Group',
      endpoint: '/Groups',
      description: 'Group: a product role of the catalogue ("product:role")',
      schema: URN.group,
      meta: { resourceType: 'ResourceType', location: `${baseUrl}/ResourceTypes/Group` },
    },
  ];
}

/** The schema documents: RFC 7643 User and Group, the enterprise extension and wum's (RFC 7643 §7). */
export function schemas(baseUrl: string): Record<string, unknown>[] {
  return schemaDocuments().map((document) => ({
    ...document,
    meta: { resourceType: 'Schema', location: `${baseUrl}/Schemas/${document.id as string}` },
  }));
}
