import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CONSOLE_TAG } from '../../src/http/schemas/console.ts';

/*
 * Every answer of an in-process app checked against the OpenAPI document the same app serves
 * (docs/api.md, introduction): the route is in the document, the status is declared for it,
 * and a JSON body matches the declared schema of its media type. So the document cannot drift
 * from what the service does: a test suite that meets an undeclared answer fails. The console's
 * routes, hidden from the public document, are checked against the console's own
 * (`app.consoleSwagger()`; docs/api.md, "The console's routes").
 */

/** The parts of the document the check reads. */
interface Operation {
  readonly responses?: Record<string, { readonly content?: Record<string, { readonly schema?: unknown }> }>;
}
type Document = { readonly paths?: Record<string, Record<string, Operation>> };

/** What {@link checkAnswersAgainstDocument} found: one line per answer that the document does not describe. */
export interface DocumentCheck {
  readonly violations: readonly string[];
}

/** A JSON Pointer token inside a URI fragment (RFC 6901 §3 and §6). */
const pointerToken = (token: string) => encodeURIComponent(token.replace(/~/g, '~0').replace(/\//g, '~1'));

/** One document the check reads, with the Ajv instance and validators compiled from it. */
interface CheckedDocument {
  readonly document: Document;
  readonly ajv: Ajv2020;
  readonly validators: Map<string, ValidateFunction>;
}

/**
 * Documents already compiled in this process, by their paths and components: the apps of a test
 * file, and the files of a group that share a process (scripts/run-tests.ts), serve the same
 * document, so its validators are compiled once, not once per app (`npm test -- test/http/users-
 * test/http/scope-matrix`: 49.3 → 45.0 s of CPU).
 */
const compiled = new Map<string, CheckedDocument>();

/** `document` ready to validate answers with (compiled once per process). */
function checkedDocument(document: Document & { readonly components?: unknown }): CheckedDocument {
  const key = JSON.stringify([document.paths, document.components]);
  let checked = compiled.get(key);
  if (!checked) {
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
    addFormats.default(ajv);
    ajv.addSchema(document as object, 'openapi.json');
    checked = { document, ajv, validators: new Map() };
    compiled.set(key, checked);
  }
  return checked;
}

/** The validator of the schema at `pointer` in `checked`'s document, compiled once. */
function validatorFor(checked: CheckedDocument, pointer: string): ValidateFunction {
  let validate = checked.validators.get(pointer);
  if (!validate) {
    validate = checked.ajv.compile({ $ref: `openapi.json#${pointer}` });
    checked.validators.set(pointer, validate);
  }
  return validate;
}

/**
 * Adds an `onSend` hook to `app` (before `ready`) that checks each answer of a documented
 * route against the app's own OpenAPI document (a console route's against the console's
 * document) and records what does not match. Other routes hidden from the documents
 * (`schema.hide`) and answers without a route (an unknown path) are not checked.
 */
export function checkAnswersAgainstDocument(app: FastifyInstance): DocumentCheck {
  const violations: string[] = [];
  let publicDocument: CheckedDocument | undefined;
  let consoleDocument: CheckedDocument | undefined;

  /** The document that describes `route`, or undefined when none does. */
  const documentOf = (schema: { hide?: boolean; tags?: readonly string[] } | undefined): CheckedDocument | undefined => {
    if (!schema?.hide) return (publicDocument ??= checkedDocument(app.swagger() as Document));
    if (schema.tags?.includes(CONSOLE_TAG)) return (consoleDocument ??= checkedDocument(app.consoleSwagger() as Document));
    return undefined;
  };

  const check = (request: FastifyRequest, reply: FastifyReply, payload: unknown): string | undefined => {
    const route = request.routeOptions;
    if (!route.url) return undefined;
    const checked = documentOf(route.schema as { hide?: boolean; tags?: readonly string[] } | undefined);
    if (!checked) return undefined;
    const { document, ajv } = checked;
    const path = route.url.replace(/:(\w+)/g, '{$1}').replace(/\*$/, '{*}');
    const method = request.method.toLowerCase();
    const operation = document.paths?.[path]?.[method];
    const where = `${request.method} ${path} → ${reply.statusCode}`;
    if (!operation) return method === 'head' || method === 'options' ? undefined : `${where}: the route is not in the document`;
    const status = String(reply.statusCode);
    const declared = operation.responses?.[status] ? status : operation.responses?.[`${status[0]}XX`] ? `${status[0]}XX` : operation.responses?.default ? 'default' : undefined;
    const mediaType = String(reply.getHeader('content-type') ?? '').split(';')[0]!.trim();
    const body: unknown = typeof payload === 'string' && payload !== '' && /json/.test(mediaType) ? JSON.parse(payload) : undefined;
    const code = mediaType === 'application/problem+json' ? ` (${String((body as { code?: string }).code)})` : '';
    if (!declared) return `${where}${code}: the status is not declared`;
    const content = operation.responses![declared]!.content;
    // The console's pages are HTML: their media type is checked too (a JSON body's always is, below).
    if (checked === consoleDocument && content && mediaType && !content[mediaType]) return `${where}${code}: ${mediaType} is not declared for it`;
    if (!content || body === undefined) return undefined;
    if (!content[mediaType]?.schema) return `${where}${code}: ${mediaType} is not declared for it`;
    const pointer = ['', 'paths', path, method, 'responses', declared, 'content', mediaType, 'schema'].map(pointerToken).join('/');
    const validate = validatorFor(checked, pointer);
    if (validate(body)) return undefined;
    return `${where}${code}: the body does not match its schema: ${ajv.errorsText(validate.errors)}`;
  };

  app.addHook('onSend', async (request, reply, payload) => {
    const violation = check(request, reply, payload);
    if (violation !== undefined) violations.push(violation);
    return payload;
  });
  return { violations };
}
