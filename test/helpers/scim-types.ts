/*
 * SCIM answers as the tests read them: SCIM is outside the OpenAPI document, so these types say
 * what the service writes (docs/contract.md, "SCIM 2.0 provisioning"; RFC 7643, RFC 7644). Like
 * every type given to the typed reader, they are a claim, not a check: the assertions check the
 * values. The list and error bodies are in test/helpers/json.ts (`ScimList`, `ScimError`).
 */

/** A SCIM User (RFC 7643 §4.1) as the service writes it, with the enterprise and wum extensions. */
export interface ScimUser {
  schemas: string[];
  id: string;
  externalId?: string;
  userName: string;
  name: { formatted?: string; givenName?: string; familyName?: string };
  displayName?: string;
  title?: string;
  active: boolean;
  emails: Array<{ value: string; type?: string; primary?: boolean }>;
  phoneNumbers?: Array<{ value: string; type?: string }>;
  roles: Array<{ value: string }>;
  meta: { resourceType: string; created: string; lastModified: string; version: string; location: string };
  'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'?: { department?: string; manager?: { value: string } };
  'urn:ietf:params:scim:schemas:extension:wum:2.0:User': { workspaceRole: string };
  /** Attributes the service must not write (a password, an unknown attribute), which tests check are absent. */
  [attribute: string]: unknown;
}

/** The service's SCIM capabilities (RFC 7643 §5), the parts the tests read. */
export interface ScimServiceProviderConfig {
  patch: { supported: boolean };
  bulk: { supported: boolean };
  filter: { supported: boolean; maxResults: number };
  etag: { supported: boolean };
  authenticationSchemes: Array<{ type: string; name: string }>;
}

/** A SCIM resource type (RFC 7643 §6): where a kind of resource lives and its schema. */
export interface ScimResourceType {
  id: string;
  name: string;
  endpoint: string;
  schema: string;
}

/** A SCIM schema (RFC 7643 §7): its id and attributes, with an attribute's allowed values. */
export interface ScimSchema {
  id: string;
  name?: string;
  description?: string;
  attributes: Array<{ name: string; type: string; canonicalValues?: string[] }>;
}
