import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import newman from 'newman';
import { loopbackAgent } from './http.ts';
import type { StepResult, SuiteResult } from './report.ts';
import type { SuiteWorkspace } from './target.ts';

/*
 * Microsoft's SCIM reference Postman collection, run with newman. The collection is read from
 * the suites folder and adapted in memory, step by step, where it contradicts docs/contract.md; each
 * adaptation is recorded against its step and printed. Everything else runs as published.
 */

interface PostmanItem {
  name: string;
  item?: PostmanItem[];
  request?: {
    method: string;
    url: { raw: string; path?: string[] } | string;
    body?: { mode?: string; raw?: string };
  };
  event?: Array<{ listen: string; script: { exec: string[] } }>;
}

/** The catalogue product the collection's group names become roles of. */
export const GROUP_PRODUCT = 'scim-suite';

/** A group name of the collection as a role name of the catalogue (letters, digits, `._-`). */
function roleName(displayName: string): string {
  return displayName.replace(/[^A-Za-z0-9._-]/g, '-').replace(/^[^A-Za-z0-9]/, 'g');
}

/** The collection's userNames are not emails; wum's userName is the email (SOURCES.md). */
function emailOf(userName: string): string {
  return userName.includes('@') ? userName : `${userName}@example.com`;
}

const USERS_PATH = /\/Users(\/|\?|$)/;
const GROUPS_PATH = /\/Groups(\/|\?|$)/;

/** A published request body is any JSON: its fields are read one by one, each checked. */
function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** The collection adapted to docs/contract.md, with what was changed per step, and the catalogue roles it needs. */
export interface AdaptedCollection {
  readonly collection: { info: unknown; item: PostmanItem[] };
  /** Step name (with its position) → what was changed and why. */
  readonly adaptations: Map<PostmanItem, string[]>;
  readonly roles: string[];
  readonly skipped: string[];
}

function urlOf(item: PostmanItem): string {
  const url = item.request!.url;
  return typeof url === 'string' ? url : url.raw;
}

function testsOf(item: PostmanItem): string[] {
  return item.event?.find((e) => e.listen === 'test')?.script.exec ?? [];
}

/** Replaces `from` by `to` in the step's test script; true if it occurred. */
function replaceInTests(item: PostmanItem, from: string, to: string): boolean {
  const test = item.event?.find((e) => e.listen === 'test');
  if (!test || !test.script.exec.some((line) => line.includes(from))) return false;
  test.script.exec = test.script.exec.map((line) => line.split(from).join(to));
  return true;
}

/** Every request item, in order, with its folder. */
function requests(items: PostmanItem[]): PostmanItem[] {
  return items.flatMap((item) => (item.item ? requests(item.item) : [item]));
}

/**
 * Reads the collection and adapts it:
 * - the folder "Get Token" (Microsoft's reference server's own login) is left out;
 * - `/serviceConfiguration` → `/ServiceProviderConfig` (RFC 7644 §4);
 * - a userName `X` that is no email → `X@example.com` in bodies and in the tests that expect it
 *   (docs/contract.md: userName is the email; SOURCES.md);
 * - group displayNames `X` → `scim-suite:X'` (a role of the catalogue), and a PUT that renames a
 *   group keeps its name, its test expecting that name (docs/contract.md: groups are product roles, a
 *   rename is refused);
 * - a test looking for a member's display text sent in a PATCH looks for the member's id
 *   (members are the role's holders; their `display` is the user's own name, not stored text);
 * - user PATCH steps expecting `204` expect `200` (wum answers PATCH on users with the
 *   resource, RFC 7644 §3.5.2's first option, as Okta and Entra ID document it).
 */
export function adaptCollection(dir: string): AdaptedCollection {
  const collection = JSON.parse(readFileSync(join(dir, 'microsoft', 'PostmanCollection.json'), 'utf8')) as { info: unknown; item: PostmanItem[] };
  const skipped: string[] = [];
  collection.item = collection.item.filter((item) => {
    if (item.name !== 'Get Token') return true;
    skipped.push('folder "Get Token": the token endpoint of Microsoft\'s reference server, not part of SCIM');
    return false;
  });
  const adaptations = new Map<PostmanItem, string[]>();
  const note = (item: PostmanItem, text: string) => adaptations.set(item, [...(adaptations.get(item) ?? []), text]);
  const roles = new Set<string>();
  const groupNames = new Map<string, string>(); // environment variable of a group id → its adapted displayName
  const memberDisplays = new Map<string, string>(); // display text sent for a member → variable of its id
  const renamedUsers = new Map<string, string>();

  for (const item of requests(collection.item)) {
    const request = item.request!;
    const url = urlOf(item);
    if (url.includes('/serviceConfiguration')) {
      const fixed = url.replace('/serviceConfiguration', '/ServiceProviderConfig');
      request.url = typeof request.url === 'string' ? fixed : { ...request.url, raw: fixed, path: fixed.split('/').slice(3) };
      note(item, '/serviceConfiguration → /ServiceProviderConfig (RFC 7644 §4 names the endpoint so)');
    }
    const raw = request.body?.raw;
    let body: unknown;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      body = undefined; // malformed on purpose ("Post junk"): sent as published
    }
    if (isObject(body)) {
      let changed = false;
      if (USERS_PATH.test(url) && typeof body.userName === 'string' && !body.userName.includes('@')) {
        renamedUsers.set(body.userName, emailOf(body.userName));
        note(item, `userName "${body.userName}" → "${emailOf(body.userName)}" (userName is the email)`);
        body.userName = emailOf(body.userName);
        changed = true;
      }
      for (const operation of Array.isArray(body.Operations) ? (body.Operations as unknown[]) : []) {
        if (!isObject(operation)) continue;
        if (USERS_PATH.test(url) && String(operation.path).toLowerCase() === 'username' && typeof operation.value === 'string' && !operation.value.includes('@')) {
          renamedUsers.set(operation.value, emailOf(operation.value));
          note(item, `userName "${operation.value}" → "${emailOf(operation.value)}" (userName is the email)`);
          operation.value = emailOf(operation.value);
          changed = true;
        }
        if (GROUPS_PATH.test(url) && Array.isArray(operation.value)) {
          for (const member of (operation.value as unknown[]).filter(isObject)) {
            const variable = /^\{\{(\w+)\}\}$/.exec(String(member.value ?? ''))?.[1];
            if (variable && typeof member.displayName === 'string') memberDisplays.set(member.displayName, variable);
          }
        }
      }
      if (GROUPS_PATH.test(url) && typeof body.displayName === 'string') {
        const idVariable = /\/Groups\/\{\{(\w+)\}\}/.exec(url)?.[1];
        if (request.method === 'POST') {
          const adapted = `${GROUP_PRODUCT}:${roleName(body.displayName)}`;
          roles.add(roleName(body.displayName));
          const setter = testsOf(item).join('\n').match(/environment\.set\("(\w+)",\s*jsonData\.id\)/)?.[1];
          if (setter) groupNames.set(setter, adapted);
          note(item, `displayName "${body.displayName}" → "${adapted}" (a group is a product role of the catalogue)`);
          body.displayName = adapted;
          changed = true;
        } else if (idVariable && groupNames.has(idVariable) && body.displayName !== groupNames.get(idVariable)) {
          const kept = groupNames.get(idVariable)!;
          note(item, `displayName "${body.displayName}" → "${kept}", the group's own name (a rename is refused)`);
          if (replaceInTests(item, `"${body.displayName}"`, `"${kept}"`)) note(item, `its test expects "${kept}"`);
          body.displayName = kept;
          changed = true;
        }
      }
      if (changed) request.body = { ...request.body, raw: JSON.stringify(body, null, 2) };
    }
    for (const [from, to] of renamedUsers) {
      if (replaceInTests(item, `eql("${from}")`, `eql("${to}")`)) note(item, `its test expects userName "${to}"`);
    }
    for (const [display, variable] of memberDisplays) {
      if (replaceInTests(item, `"${display}"`, `pm.environment.get("${variable}")`)) {
        note(item, `looks for member ${variable}'s id instead of the display text "${display}" sent for it (members are the role's holders, shown with their own names)`);
      }
    }
    if (request.method === 'PATCH' && USERS_PATH.test(url) && replaceInTests(item, 'have.status(204)', 'have.status(200)')) {
      note(item, 'expects 200 (with the user) instead of 204: RFC 7644 §3.5.2 allows either; wum returns the resource');
    }
  }
  return { collection, adaptations, roles: [...roles], skipped };
}

/** Runs the adapted collection with newman against a workspace. */
export async function runMicrosoftCollection(adapted: AdaptedCollection, workspace: SuiteWorkspace): Promise<SuiteResult> {
  const scim = new URL(workspace.scimUrl);
  const summary = await new Promise<newman.NewmanRunSummary>((resolve, reject) =>
    newman.run(
      {
        collection: adapted.collection as never,
        environment: {
          values: [
            { key: 'Protocol', value: scim.protocol.replace(':', ''), enabled: true },
            { key: 'Server', value: scim.hostname, enabled: true },
            { key: 'Port', value: scim.port ? `:${scim.port}` : '', enabled: true },
            { key: 'Api', value: scim.pathname.replace(/^\//, ''), enabled: true },
            { key: 'token', value: workspace.apiKey, enabled: true },
          ],
        } as never,
        reporters: [],
        timeoutRequest: 30_000,
        requestAgents: { http: loopbackAgent },
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    ),
  );
  // newman runs the requests in collection order, once each: execution i is request i.
  const items = requests(adapted.collection.item);
  const steps: StepResult[] = (summary.run.executions).map((execution, i) => {
    const item = items[i]?.name === execution.item.name ? items[i] : undefined;
    const requestError = (execution as { requestError?: Error }).requestError;
    const failures = [
      ...(requestError ? [String(requestError)] : []),
      ...(execution.assertions ?? []).filter((a) => a.error).map((a) => `${a.assertion}: ${a.error.message}`),
    ];
    const adaptation = item ? adapted.adaptations.get(item)?.join('; ') : undefined;
    return { name: execution.item.name, passed: failures.length === 0, failures, ...(adaptation ? { adaptation } : {}) };
  });
  if (steps.length !== items.length) {
    steps.push({ name: '(collection)', passed: false, failures: [`ran ${steps.length} of ${items.length} requests`] });
  }
  return { suite: "Microsoft's SCIM reference collection", steps, skipped: adapted.skipped };
}
