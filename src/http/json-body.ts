import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.ts';

/** Deepest nesting of objects and arrays a JSON body may have; no request of the API needs more than a few levels. */
export const MAX_JSON_DEPTH = 64;

/** The deepest nesting of `{`/`[` in JSON text, outside strings, read in one pass without recursion. */
export function jsonDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i += 1; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) deepest = Math.max(deepest, ++depth);
    else if (c === 0x7d || c === 0x5d) depth -= 1;
  }
  return deepest;
}

type BodyParser = (request: FastifyRequest, body: string, done: (error: Error | null, body?: unknown) => void) => void;

/**
 * Fastify's JSON body parser (prototype poisoning refused) behind a depth check: a body
 * nested deeper than {@link MAX_JSON_DEPTH} is refused before it is parsed, so no later
 * recursive walk (validation, the NUL check) can exhaust the stack and answer 500.
 * Register it with `parseAs: 'string'` for each JSON media type.
 * @throws AppError `validation_failed` (400) on field `(body)` naming the limit.
 */
export function depthLimitedJsonParser(app: FastifyInstance): BodyParser {
  const parse = app.getDefaultJsonParser('error', 'error') as BodyParser;
  return (request, body, done) => {
    if (jsonDepth(body) > MAX_JSON_DEPTH) {
      done(
        new AppError('validation_failed', `The JSON body is nested deeper than ${MAX_JSON_DEPTH} levels.`, [
          { field: '(body)', message: `must not nest objects and arrays deeper than ${MAX_JSON_DEPTH} levels` },
        ]),
      );
      return;
    }
    parse(request, body, done);
  };
}
