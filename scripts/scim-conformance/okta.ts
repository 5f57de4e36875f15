import { strict as nodeAssert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { send, type HttpResponse } from './http.ts';
import type { StepResult, SuiteResult } from './report.ts';
import type { SuiteWorkspace } from './target.ts';

/*
 * An interpreter of Okta's Runscope test exports (the SPEC and CRUD tests): request steps
 * with `{{variable}}` templates, assertions on status, JSON properties and time, variables
 * extracted from the JSON, and the steps' scripts (run in a sandbox with `assert`, `log`,
 * `response`). Pauses wait for Okta's asynchronous provisioning; there is nothing to wait for
 * here, so they are not replayed.
 */

interface Assertion {
  readonly comparison: string;
  readonly source: string;
  readonly property?: string | null;
  readonly value: string | number | null;
}

interface Step {
  readonly step_type: string;
  readonly note?: string;
  readonly method?: string;
  readonly url?: string;
  readonly headers?: Record<string, string | string[]>;
  readonly body?: string;
  readonly assertions?: readonly Assertion[];
  readonly variables?: ReadonlyArray<{ source: string; name: string | null; property: string }>;
  readonly scripts?: readonly string[];
  readonly skipped?: boolean;
}

type Variables = Map<string, string>;

/** `text` with `{{name}}` replaced by the variables. */
function fill(text: string, variables: Variables): string {
  return text.replace(/\{\{\s*([\w.-]+)\s*\}\}/g, (whole, name: string) => variables.get(name) ?? whole);
}

/** A property of a JSON value by Runscope's path: `Resources[0].name.familyName`; empty: the value itself. */
function property(json: unknown, path: string | null | undefined): unknown {
  if (!path) return json;
  let current: unknown = json;
  for (const part of path.replace(/\[(\d+)\]/g, '.$1').split('.').filter(Boolean)) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}

/** Runscope's comparisons; a message when one fails. */
function check(assertion: Assertion, response: HttpResponse, json: unknown, variables: Variables): string | undefined {
  const actual =
    assertion.source === 'response_status' ? response.status : assertion.source === 'response_time' ? response.timeMs : property(json, assertion.property);
  const expected = assertion.value === null ? null : fill(String(assertion.value), variables);
  const empty = actual === undefined || actual === null || actual === '' || (Array.isArray(actual) && actual.length === 0);
  let ok: boolean;
  switch (assertion.comparison) {
    case 'equal_number':
      ok = Number(actual) === Number(expected);
      break;
    case 'equal':
      ok = !empty && String(actual) === expected;
      break;
    case 'not_empty':
      ok = !empty;
      break;
    case 'has_value':
    case 'contains':
      ok = Array.isArray(actual) ? actual.some((v) => String(v) === expected) : typeof actual === 'string' && actual.includes(expected ?? '');
      break;
    case 'is_a_number':
      ok = typeof actual === 'number' || (typeof actual === 'string' && actual.trim() !== '' && !Number.isNaN(Number(actual)));
      break;
    case 'is_less_than':
      ok = Number(actual) < Number(expected);
      break;
    default:
      return `unknown comparison ${assertion.comparison}`;
  }
  if (ok) return undefined;
  const where = assertion.source === 'response_json' ? `${assertion.property}` : assertion.source;
  return `${where} ${assertion.comparison} ${expected ?? ''} (got ${JSON.stringify(actual)})`;
}

/** Runs a step's script in a sandbox: Runscope's `assert` (chai's, here Node's), `log`, `response`, `variables`. */
function runScript(script: string, response: HttpResponse, variables: Variables): string | undefined {
  if (!script.trim()) return undefined;
  try {
    runInNewContext(script, {
      assert: nodeAssert,
      log: () => undefined,
      response: { body: response.body, status: response.status, headers: response.headers },
      variables: { get: (name: string) => variables.get(name), set: (name: string, value: unknown) => variables.set(name, String(value)) },
    }, { timeout: 1000 });
    return undefined;
  } catch (error) {
    return `script: ${(error as Error).message}`;
  }
}

/** Headers of a step, templates filled. */
function headersOf(step: Step, variables: Variables): Record<string, string> {
  return Object.fromEntries(
    Object.entries(step.headers ?? {}).map(([name, value]) => [name, fill(Array.isArray(value) ? value.join(', ') : value, variables)]),
  );
}

/** Replays one request step as published. */
async function replay(step: Step, variables: Variables): Promise<StepResult> {
  const name = step.note ?? `${step.method} ${step.url}`;
  try {
    const body = step.body ? fill(step.body, variables) : undefined;
    const response = await send(step.method ?? 'GET', fill(step.url ?? '', variables).replace(/ /g, '%20'), headersOf(step, variables), body || undefined);
    let json: unknown;
    try {
      json = response.body ? JSON.parse(response.body) : undefined;
    } catch {
      json = undefined;
    }
    const failures = (step.assertions ?? []).map((a) => check(a, response, json, variables)).filter((f): f is string => f !== undefined);
    for (const script of step.scripts ?? []) {
      const failure = runScript(script, response, variables);
      if (failure) failures.push(failure);
    }
    for (const v of step.variables ?? []) {
      if (v.name && v.source === 'response_json') {
        const value = property(json, v.property);
        if (value !== undefined) variables.set(v.name, String(value));
      }
    }
    return { name, passed: failures.length === 0, failures };
  } catch (error) {
    return { name, passed: false, failures: [(error as Error).message] };
  }
}

/** A random lower-case word. */
function word(length: number): string {
  return randomBytes(length).toString('hex').slice(0, length).replace(/^\d/, 'x');
}

/** Reads a suite file. */
function readSuite(dir: string, file: string): { steps: Step[] } {
  return JSON.parse(readFileSync(join(dir, 'okta', file), 'utf8')) as { steps: Step[] };
}

/**
 * Okta's SPEC test, every request step as published, with the variables its Initial Script
 * sets (a random `…@atko.com` user name and its upper-case twin, an email and names, and an
 * email and an id that match nothing). The workspace must already hold one user.
 */
export async function runOktaSpecTest(dir: string, workspace: SuiteWorkspace): Promise<SuiteResult> {
  const suffix = word(10);
  const username = `runscope${suffix}@atko.com`;
  const variables: Variables = new Map([
    ['SCIMBaseURL', workspace.scimUrl],
    ['auth', `Bearer ${workspace.apiKey}`],
    ['randomUsername', username],
    ['randomUsernameCaps', username.toUpperCase()],
    ['randomEmail', `runscope${suffix}.mail@atko.com`],
    ['randomGivenName', `Given${word(6)}`],
    ['randomFamilyName', `Family${word(6)}`],
    ['InvalidUserEmail', `invalid-${word(12)}@atko.com`],
    ['UserIdThatDoesNotExist', `010101${word(14)}`],
  ]);
  const steps: StepResult[] = [];
  for (const step of readSuite(dir, 'Okta-SCIM-20-SPEC-Test.json').steps) {
    if (step.step_type !== 'request' || step.skipped) continue;
    steps.push(await replay(step, variables));
  }
  return { suite: 'Okta SPEC test', steps, skipped: ['pauses (they wait for Okta, not for the server)'] };
}

/** How the app integration is built in Okta: OIN apps send PATCH for status changes, wizard-built (AIW) apps PUT. */
export type OktaAppKind = 'oin' | 'aiw';

/** One SCIM request Okta sends, and the statuses that mean it went through. */
interface OktaRequest {
  readonly method: string;
  readonly path: string;
  readonly body?: unknown;
  readonly expect: readonly number[];
  /** Reads the answer (e.g. the user's id). */
  readonly read?: (json: unknown) => void;
}

/**
 * The SCIM requests Okta sends for the CRUD test's Okta-side steps, from Okta's SCIM 2.0
 * reference: the connection test lists users; assigning a user looks the userName up, then
 * creates the user (or, if found deactivated, reactivates it); a profile change reads the user
 * and PUTs it whole; a deactivation or unassignment (and the reactivation) is `PATCH` with
 * `{"op": "replace", "value": {"active": …}}` for OIN apps and a whole-user `PUT` for
 * wizard-built ones. Creating and reactivating the user in Okta alone sends nothing.
 */
function oktaRequests(note: string, kind: OktaAppKind, variables: Variables, occurrence: number): OktaRequest[] | undefined {
  const email = variables.get('okta_user_email')!;
  const user = (givenName: string, active: boolean) => ({
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    ...(variables.has('scim_id') ? { id: variables.get('scim_id') } : {}),
    userName: email,
    name: { givenName, familyName: variables.get('okta_user_lastname') },
    emails: [{ primary: true, value: email, type: 'work' }],
    displayName: `${givenName} ${variables.get('okta_user_lastname')}`,
    title: variables.get('okta_user_title'),
    phoneNumbers: [{ value: variables.get('okta_user_primaryphone'), type: 'work' }],
    locale: 'en-US',
    externalId: variables.get('okta_add_userid'),
    groups: [],
    active,
  });
  const lookUp: OktaRequest = {
    method: 'GET',
    path: `/Users?filter=${encodeURIComponent(`userName eq "${email}"`)}&startIndex=1&count=100`,
    expect: [200],
    read: (json) => {
      const id = (json as { Resources?: Array<{ id?: string }> } | undefined)?.Resources?.[0]?.id;
      if (id) variables.set('scim_id', id);
    },
  };
  const setActive = (active: boolean): OktaRequest[] =>
    kind === 'oin'
      ? [
          {
            method: 'PATCH',
            path: `/Users/${variables.get('scim_id')}`,
            body: { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', value: { active } }] },
            expect: [200, 204],
          },
        ]
      : [
          { method: 'GET', path: `/Users/${variables.get('scim_id')}`, expect: [200] },
          { method: 'PUT', path: `/Users/${variables.get('scim_id')}`, body: user(variables.get('okta_user_firstname_update')!, active), expect: [200] },
        ];
  switch (note.trim()) {
    case 'Check SCIM Apps instance in Okta':
      return [{ method: 'GET', path: '/Users?startIndex=1&count=1', expect: [200] }];
    case 'Assign user to SCIM App':
      if (occurrence === 0) {
        return [lookUp, { method: 'POST', path: '/Users', body: user(variables.get('okta_user_firstname')!, true), expect: [201], read: (json) => variables.set('scim_id', (json as { id: string }).id) }];
      }
      return [lookUp, ...setActive(true)];
    case 'Update user firstname':
      return [
        { method: 'GET', path: `/Users/${variables.get('scim_id')}`, expect: [200] },
        { method: 'PUT', path: `/Users/${variables.get('scim_id')}`, body: user(variables.get('okta_user_firstname_update')!, true), expect: [200] },
      ];
    case 'Deactivate user in Okta':
    case 'Removes an assignment for a user in Okta':
      return setActive(false);
    default:
      return undefined;
  }
}

/** Okta-side steps that make Okta send nothing to the app. */
const OKTA_ONLY = new Set(['Add new random user to Okta', 'Reactivate user in okta']);

/**
 * Okta's CRUD test: its `{{SCIMUrl}}` steps as published; each `{{oktaOrgUrl}}` step replaced
 * by the SCIM requests Okta sends for it (an adapted step, passed when every request got a
 * success status), or left out when Okta sends nothing.
 */
export async function runOktaCrudTest(dir: string, workspace: SuiteWorkspace, kind: OktaAppKind): Promise<SuiteResult> {
  const first = `First${word(6)}`;
  const variables: Variables = new Map([
    ['SCIMUrl', workspace.scimUrl],
    ['SCIMAuth', `Bearer ${workspace.apiKey}`],
    ['okta_user_firstname', first],
    ['okta_user_firstname_update', `${first}Updated`],
    ['okta_user_lastname', `Last${word(6)}`],
    ['okta_user_email', `crud.${word(10)}@atko.com`],
    ['okta_user_title', 'Engineer'],
    ['okta_user_primaryphone', '+1 555 0100'],
    ['okta_add_userid', `00u${word(17)}`],
  ]);
  const steps: StepResult[] = [];
  const skipped = ['pauses (they wait for Okta, not for the server)'];
  const occurrences = new Map<string, number>();
  const auth = { authorization: `Bearer ${workspace.apiKey}`, accept: 'application/scim+json' };
  for (const step of readSuite(dir, 'Okta-SCIM-20-CRUD-Test.json').steps) {
    if (step.step_type !== 'request' || step.skipped) continue;
    if (!step.url?.includes('{{oktaOrgUrl}}')) {
      steps.push(await replay(step, variables));
      continue;
    }
    const note = (step.note ?? '').trim();
    if (OKTA_ONLY.has(note)) {
      skipped.push(`${note}: an Okta-side step that sends nothing to the app`);
      continue;
    }
    const occurrence = occurrences.get(note) ?? 0;
    occurrences.set(note, occurrence + 1);
    const requests = oktaRequests(note, kind, variables, occurrence);
    if (!requests) {
      steps.push({ name: note, passed: false, failures: ['no SCIM replay known for this Okta-side step'] });
      continue;
    }
    const failures: string[] = [];
    const sent: string[] = [];
    // Each request is built when its turn comes: it may need what the previous one returned.
    for (let i = 0; i < requests.length; i++) {
      const request = oktaRequests(note, kind, variables, occurrence)![i]!;
      sent.push(`${request.method} ${request.path.split('?')[0]!.replace(variables.get('scim_id') ?? '{id}', '{id}')}`);
      const body = request.body === undefined ? undefined : JSON.stringify(request.body);
      const response = await send(request.method, `${workspace.scimUrl}${request.path}`, {
        ...auth,
        ...(body === undefined ? {} : { 'content-type': 'application/scim+json; charset=utf-8' }),
      }, body).catch((error: Error) => ({ status: 0, body: error.message, headers: {}, timeMs: 0 }));
      if (!request.expect.includes(response.status)) {
        failures.push(`${request.method} ${request.path} → ${response.status} ${response.body.slice(0, 200)}`);
        break;
      }
      if (request.read && response.body) request.read(JSON.parse(response.body));
    }
    steps.push({
      name: note,
      passed: failures.length === 0,
      failures,
      adaptation: `an Okta-side step, replayed as the SCIM requests Okta sends (${kind === 'oin' ? 'OIN app' : 'wizard-built app'}): ${sent.join(', ')}`,
    });
  }
  return { suite: `Okta CRUD test (${kind === 'oin' ? 'OIN app, PATCH' : 'wizard-built app, PUT'})`, steps, skipped };
}
