import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/*
 * Every answer of an in-process app checked against the OpenAPI document the same app serves
 * (docs/api.md, introduction): the route is in the document, the status is declared for it,
 * and a JSON body matches the declared schema of its media type. So the document cannot drift
 * from what the service does: a test suite that meets an undeclared answer fails.
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

/**
 * Adds an `onSend` hook to `app` (before `ready`) that checks each answer of a documented
 * route against the app's own OpenAPI document and records what does not match. Routes hidden
 * from the document (`schema.hide`) and answers without a route (an unknown path) are not checked.
 */
export function checkAnswersAgainstDocument(app: FastifyInstance): DocumentCheck {
  const violations: string[] = [];
  let ajv: Ajv2020 | undefined;
  let document: Document | undefined;
  const validators = new Map<string, ValidateFunction>();

  const validatorFor = (pointer: string): ValidateFunction => {
    let validate = validators.get(pointer);
    if (!validate) {
      validate = ajv!.compile({ $ref: `openapi.json#${pointer}` });
      validators.set(pointer, validate);
    }
    return validate;
  };

  const check = (request: FastifyRequest, reply: FastifyReply, payload: unknown): string | undefined => {
    const route = request.routeOptions;
    if (!route.url || (route.schema as { hide?: boolean } | undefined)?.hide) return undefined;
    if (!document) {
      document = app.swagger() as Document;
      ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
      addFormats.default(ajv);
      ajv.addSchema(document as object, 'openapi.json');
    }
    const path = route.url.replace(/:(\w+)/g, '{$1}');
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
    if (!content || body === undefined) return undefined;
    if (!content[mediaType]?.schema) return `${where}${code}: ${mediaType} is not declared for it`;
    const pointer = ['', 'paths', path, method, 'responses', declared, 'content', mediaType, 'schema'].map(pointerToken).join('/');
    const validate = validatorFor(pointer);
    if (validate(body)) return undefined;
    return `${where}${code}: the body does not match its schema: ${ajv!.errorsText(validate.errors)}`;
  };

  app.addHook('onSend', async (request, reply, payload) => {
    const violation = check(request, reply, payload);
    if (violation !== undefined) violations.push(violation);
    return payload;
  });
  return { violations };
}
