import { randomBytes } from 'node:crypto';
import type { CreatedWorkspace } from 'wum/sdk';
import { sendJson } from './http.ts';

/*
 * What the suites assume, provisioned through wum's admin and native APIs: a fresh workspace
 * with an API key per suite (Microsoft's collection counts every user of its workspace), the
 * catalogue products its group names become, and for Okta's SPEC test one user to find.
 */

/** A running wum server the runner talks to. */
export interface ServerTarget {
  /** `http://localhost:3000`: the admin API's base (any host). */
  readonly url: string;
  readonly adminToken: string;
  /** The base domain workspaces are labels of (BASE_DOMAIN, default `localhost`). */
  readonly baseDomain: string;
}

/** A workspace made for one suite run. */
export interface SuiteWorkspace {
  readonly subdomain: string;
  readonly apiKey: string;
  /** `http://acme.localhost:3000/scim/v2`. */
  readonly scimUrl: string;
  /** `http://acme.localhost:3000/api/external/v2`. */
  readonly apiUrl: string;
}

/** Calls the admin API. */
async function admin(target: ServerTarget, method: string, path: string, body?: unknown): Promise<unknown> {
  const response = await sendJson(method, `${target.url}/admin/v1${path}`, { authorization: `Bearer ${target.adminToken}` }, body);
  if (response.status >= 300) throw new Error(`admin ${method} ${path} → ${response.status}: ${JSON.stringify(response.json)}`);
  return response.json;
}

/** Creates a workspace (with its first key) for one suite. */
export async function createSuiteWorkspace(target: ServerTarget, prefix: string): Promise<SuiteWorkspace> {
  const subdomain = `${prefix}-${randomBytes(4).toString('hex')}`;
  const created = (await admin(target, 'POST', '/workspaces', { subdomain, name: `SCIM conformance: ${prefix}` })) as CreatedWorkspace;
  const origin = new URL(target.url);
  const host = `${subdomain}.${target.baseDomain}${origin.port ? `:${origin.port}` : ''}`;
  return {
    subdomain,
    apiKey: created.api_key.key,
    scimUrl: `${origin.protocol}//${host}/scim/v2`,
    apiUrl: `${origin.protocol}//${host}/api/external/v2`,
  };
}

/** Creates or replaces a catalogue product. */
export async function putProduct(target: ServerTarget, name: string, roles: readonly string[]): Promise<void> {
  await admin(target, 'PUT', `/products/${encodeURIComponent(name)}`, { roles });
}

/** Adds a user through the native API (`POST /users`). */
export async function addNativeUser(workspace: SuiteWorkspace, user: { email: string; first_name: string; last_name: string }): Promise<void> {
  const response = await sendJson('POST', `${workspace.apiUrl}/users`, { 'x-api-key': workspace.apiKey }, {
    user: { ...user, role: 'non_owner', apps: [] },
  });
  if (response.status !== 201) throw new Error(`POST /users → ${response.status}: ${JSON.stringify(response.json)}`);
}
