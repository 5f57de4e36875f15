/*
 * The typed reader of a JSON answer in the tests. A body is typed by the OpenAPI document the
 * service serves (sdk/schema.ts, generated from it): by the name of one of its schemas
 * (`json<'User'>(res)`, `json<'Problem'>(res)`) or of one of its operations, for the body that
 * operation answers with on success (`json<'listUsers'>(res)`). A body the document does not
 * describe (SCIM, the console's session routes, a CLI run's output) is typed by the test itself
 * (`json<{ Resources: ScimUser[] }>(res)`). The type is a claim, not a check: the test context
 * checks every answer against the document (test/helpers/document-check.ts), and the assertions
 * check the values. Source: docs/api.md; docs/contract.md.
 */
import assert from 'node:assert/strict';
import type { components, operations } from '../../sdk/schema.ts';
import type { ImportJob } from '../../sdk/imports.ts';
import type { ImportSummary, RowReport } from '../../sdk/users-import-rows.ts';

/** The document's named schemas. */
type Schemas = components['schemas'];

/** The JSON body an operation answers with on success (any 2xx it declares). */
type SuccessBody<Op extends keyof operations> = {
  [Status in keyof operations[Op]['responses']]: Status extends 200 | 201 | 202
    ? operations[Op]['responses'][Status] extends { content: { 'application/json': infer Body } }
      ? Body
      : never
    : never;
}[keyof operations[Op]['responses']];

/** What {@link json} may be told a body is: a schema's name, an operation's name, or a type. */
export type BodyName = keyof Schemas | keyof operations | object;

/** The type a {@link BodyName} stands for. */
export type Body<Name extends BodyName> = Name extends keyof Schemas
  ? Schemas[Name]
  : Name extends keyof operations
    ? SuccessBody<Name>
    : Name;

/** Something that carries a JSON text: an injected or sent response (`body`), or a `wum` run (`stdout`). */
export type JsonSource = { readonly body: string } | { readonly stdout: string } | string;

/**
 * Parses the JSON of `source` (a response's body, a run's stdout, or the text itself) as the
 * body `Name` names.
 * @throws SyntaxError when the text is not JSON (the test fails there, with the parser's message).
 */
export function json<Name extends BodyName>(source: JsonSource): Body<Name> {
  const text = typeof source === 'string' ? source : 'body' in source ? source.body : source.stdout;
  return JSON.parse(text) as Body<Name>;
}

/**
 * The console session the service describes at `/console/session` (a route kept out of the
 * public document): its workspace, who it acts for, its scopes and when it ends.
 */
export interface ConsoleSession {
  workspace: { subdomain: string };
  actor: Schemas['Actor'];
  scopes: string[];
  expires_at: string;
}

/** A SCIM error body (RFC 7644 §3.12): SCIM answers are outside the OpenAPI document. */
export interface ScimError {
  schemas: string[];
  status: string;
  scimType?: string;
  detail?: string;
}

/** A SCIM list response (RFC 7644 §3.4.2) of `Resource`s. */
export interface ScimList<Resource = { id: string }> {
  schemas: string[];
  totalResults: number;
  startIndex: number;
  itemsPerPage: number;
  Resources: Resource[];
}

/** A SCIM Group (RFC 7643 §4.2) as the service writes it: its members are the role's holders. */
export interface ScimGroup {
  schemas: string[];
  id: string;
  displayName: string;
  externalId?: string;
  members?: Array<{ value: string; display?: string; $ref?: string; type?: string }>;
}

/** What `wum users import --json` prints: the counts, one report per row, and the server's job (README, "CLI"). */
export interface ImportRun {
  summary: ImportSummary;
  rows: RowReport[];
  job: ImportJob;
}

/** An event's `data` when the event is a user's (every type but `audit_stream.paused`). */
export type UserEventData = Extract<Schemas['Event']['data'], { user: unknown }>;

/**
 * The `data` of a user's event (docs/api.md, "Events"), for tests that read `data.user`.
 * @throws AssertionError when the event is not a user's (an `audit_stream.paused`).
 */
export function userData(event: { readonly type: string; readonly data: Schemas['Event']['data'] }): UserEventData {
  if (!('user' in event.data)) throw new assert.AssertionError({ message: `${event.type} is not a user's event`, actual: event.data });
  return event.data;
}
