import { Readable } from 'node:stream';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance, FastifySchemaCompiler } from 'fastify';
import { AppError } from '../core/errors.ts';
import type { FieldError } from '../core/errors.ts';
import { EMAIL_PATTERN } from '../core/users/email.ts';
import { addRouteHook, syncHook } from './hooks.ts';

/*
 * Two validators: bodies are checked strictly (no coercion, no silent removal of unknown
 * fields, so typos like `firstName` are reported), while query strings and path parameters
 * arrive as text and are coerced to the schema's types.
 */
function createAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes,
    removeAdditional: false,
    useDefaults: true,
    verbose: true,
    strict: false,
  });
  addFormats.default(ajv, ['email', 'date-time', 'uuid']);
  return ajv;
}

const bodyAjv = createAjv(false);
const textAjv = createAjv(true);

/**
 * Fastify validator compiler: strict for bodies, coercing for querystring, params, headers.
 * Each schema is compiled on the first request that needs it, not at start: compiling the
 * schemas of every route took about a tenth of a second of a start (docs/performance.md, "The
 * embedded store"), for routes a process may never serve. Fastify reads a failed validation's
 * `errors` from the function it was given, so they are copied onto it.
 */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : textAjv;
  let compiled: ValidateFunction | undefined;
  const validate = (data: unknown): boolean => {
    compiled ??= ajv.compile(schema as object);
    const valid = compiled(data);
    validate.errors = compiled.errors;
    return valid;
  };
  validate.errors = undefined as ValidateFunction['errors'];
  return validate as ReturnType<FastifySchemaCompiler<unknown>>;
};

/** `/user/apps/1/role` → `user.apps[1].role` (the field notation of our problem details). */
function toFieldPath(instancePath: string, child?: string): string {
  const segments = instancePath.split('/').slice(1);
  if (child !== undefined) segments.push(child);
  return segments
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((path, s) => (/^\d+$/.test(s) ? `${path}[${s}]` : path ? `${path}.${s}` : s), '') || '(body)';
}

/** A string parameter of an Ajv error, such as `missingProperty`: Ajv types `params` as any-valued. */
function param(error: ErrorObject, name: string): string | undefined {
  const value: unknown = error.params[name];
  return typeof value === 'string' ? value : undefined;
}

function describe(error: ErrorObject): FieldError {
  switch (error.keyword) {
    case 'required':
      return { field: toFieldPath(error.instancePath, param(error, 'missingProperty')), message: 'is required' };
    case 'additionalProperties':
      return {
        field: toFieldPath(error.instancePath, param(error, 'additionalProperty')),
        message: 'is not an allowed field',
      };
    case 'format':
      return {
        field: toFieldPath(error.instancePath),
        message: error.params.format === 'email' ? 'must be a valid email address' : `must be a valid ${error.params.format}`,
      };
    case 'pattern':
      if (error.params.pattern === EMAIL_PATTERN) return { field: toFieldPath(error.instancePath), message: 'must be a valid email address' };
      return { field: toFieldPath(error.instancePath), message: error.message ?? 'is invalid' };
    case 'enum':
      return {
        field: toFieldPath(error.instancePath),
        message: `must be one of: ${(error.params.allowedValues as unknown[]).join(', ')}`,
      };
    default:
      if (Array.isArray(error.data) && error.keyword === 'type' && error.params.type !== 'array') {
        return { field: toFieldPath(error.instancePath), message: 'must be given once' };
      }
      return { field: toFieldPath(error.instancePath), message: error.message ?? 'is invalid' };
  }
}

/**
 * Turns Ajv errors into one {@link FieldError} per field (the first message for a field wins),
 * e.g. `{ field: "user.apps[1].role", message: "is required" }`.
 */
export function toFieldErrors(errors: readonly ErrorObject[]): FieldError[] {
  const byField = new Map<string, FieldError>();
  for (const error of errors) {
    const described = describe(error);
    if (!byField.has(described.field)) byField.set(described.field, described);
  }
  return [...byField.values()];
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's body may be left out altogether (every field has a default). */
    optionalBody?: boolean;
  }
}

/**
 * A route that takes a JSON body answers `415 unsupported_media_type` when the request has
 * no Content-Type at all (other media types are refused by the body parser), unless its
 * body is optional and none was sent. Runs after authentication and routing, as docs/contract.md
 * Part B orders the checks.
 */
export function requireJsonContentType(app: FastifyInstance): void {
  const check = syncHook((request) => {
    if (request.headers['content-type']) return;
    const sent = request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
    if (sent || !request.routeOptions.config.optionalBody) throw new AppError('unsupported_media_type', 'Send the body as application/json.');
  });
  app.addHook('onRoute', (route) => {
    if (route.schema?.body) addRouteHook(route, 'onRequest', check);
  });
}

/** A lone UTF-16 surrogate: in `u` mode a well-formed pair is one code point, so only lone halves match. */
const LONE_SURROGATE = /\p{Cs}/u;

/** Why PostgreSQL could not store `text`, or undefined: NUL characters, lone surrogates (no UTF-8 form). */
function unstorable(text: string): string | undefined {
  if (text.includes('\u0000')) return 'must not contain NUL characters';
  if (LONE_SURROGATE.test(text)) return 'must be valid Unicode (no lone surrogate such as \\ud800)';
  return undefined;
}

/** The first path (e.g. `user.first_name`) holding a string PostgreSQL cannot store, with why. */
function findUnstorable(value: unknown, path: string): FieldError | undefined {
  if (typeof value === 'string') {
    const message = unstorable(value);
    return message ? { field: path || '(body)', message } : undefined;
  }
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = findUnstorable(item, `${path}[${i}]`);
      if (found) return found;
    }
  } else if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      const name = path ? `${path}.${key}` : key;
      const keyProblem = unstorable(key);
      if (keyProblem) return { field: name, message: keyProblem };
      const found = findUnstorable(item ?? null, name);
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * Refuses text PostgreSQL cannot store — NUL characters and lone surrogates (`"\ud800"` in
 * JSON) — in path parameters, query and body before validation, so they never fail deeper
 * down (docs/contract.md Part B, Errors: never a 5xx for bad input). Refused, not repaired: a silently
 * changed name would be worse. Parameters → `400 invalid_parameter`, body → `400 validation_failed`.
 */
export function rejectUnstorableText(app: FastifyInstance): void {
  app.addHook(
    'preValidation',
    syncHook((request) => {
      const parameter = findUnstorable(request.params, '') ?? findUnstorable(request.query, '');
      if (parameter) {
        const what = parameter.message.startsWith('must not contain NUL') ? 'contains a NUL character' : 'is not valid Unicode';
        throw new AppError('invalid_parameter', `Parameter ${parameter.field} ${what}.`, [parameter]);
      }
      // A body left as a stream (an import's upload) is checked row by row as it is read.
      const field = request.body instanceof Readable ? undefined : findUnstorable(request.body, '');
      if (field) throw new AppError('validation_failed', 'The request body is invalid.', [field]);
    }),
  );
}

/**
 * A validator of bodies outside a route (each row of a bulk import is a `POST /users` body):
 * the same checks, in the same order, with the same problem as a route's body gets — text
 * PostgreSQL cannot store, then `schema` (compiled once, on first use, as a route's is).
 * Source: docs/contract.md Part B, Errors.
 * @returns a function that answers undefined for a valid body, else the AppError
 *   `validation_failed` (400) a route would have answered.
 */
export function bodyValidator(schema: object): (body: unknown) => AppError | undefined {
  let compiled: ValidateFunction | undefined;
  return (body) => {
    const field = findUnstorable(body, '');
    if (field) return new AppError('validation_failed', 'The request body is invalid.', [field]);
    compiled ??= bodyAjv.compile(schema);
    if (compiled(body)) return undefined;
    return new AppError('validation_failed', 'The request body is invalid.', toFieldErrors(compiled.errors ?? []));
  };
}
