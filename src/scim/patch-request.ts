import SCIMMY from 'scimmy';
import { AppError } from '../core/errors.ts';
import { MAX_PATCH_OPERATIONS, URN } from './constants.ts';
import { parseScimPath } from './filter.ts';
import { fromLibraryErrors, normalizeBooleans, userDefinition, withoutUnknownAttributes } from './schema-definitions.ts';

/*
 * PATCH requests (RFC 7644 §3.5.2) as identity providers send them: op names in any case
 * (`Replace`), operations with and without `path`, `"True"`/`"False"` for booleans,
 * path-less values with dotted or URN keys. Operations on a User are applied by SCIMMY's
 * PatchOp to the resource wum rendered; the result is read back like any other resource.
 */

/** One operation of a PatchOp message, checked for shape. */
export interface PatchOperation {
  /** Lower-cased: `add`, `remove` or `replace`. */
  readonly op: 'add' | 'remove' | 'replace';
  readonly path?: string;
  readonly value?: unknown;
}

const OPERATIONS = new Set(['add', 'remove', 'replace']);

/**
 * The operations of a PatchOp body. A missing `schemas` is accepted (some clients leave it
 * out); a present one must name the PatchOp message.
 *
 * @throws AppError `invalid_syntax` (400) for a body that is not a PatchOp message, an
 *   unknown `op`, a `path` that is not a string; `invalid_value` (400) for no operations or
 *   more than {@link MAX_PATCH_OPERATIONS}; `invalid_path` (400) for a malformed path.
 */
export function readPatchOperations(body: unknown): PatchOperation[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new AppError('invalid_syntax', 'The body must be a PatchOp message (RFC 7644 §3.5.2).');
  }
  const { schemas, Operations: operations } = body as { schemas?: unknown; Operations?: unknown };
  if (schemas !== undefined && !(Array.isArray(schemas) && schemas.includes(URN.patchOp))) {
    throw new AppError('invalid_syntax', `schemas must be ["${URN.patchOp}"].`);
  }
  if (!Array.isArray(operations) || operations.length === 0) {
    throw new AppError('invalid_value', 'Operations must be a list of at least one operation.');
  }
  if (operations.length > MAX_PATCH_OPERATIONS) {
    throw new AppError('invalid_value', `A PATCH request holds at most ${MAX_PATCH_OPERATIONS} operations.`);
  }
  return operations.map((operation: unknown, i) => {
    if (typeof operation !== 'object' || operation === null || Array.isArray(operation)) {
      throw new AppError('invalid_syntax', `Operations[${i}] must be an object.`);
    }
    const { op, path, value } = operation as { op?: unknown; path?: unknown; value?: unknown };
    const name = typeof op === 'string' ? op.toLowerCase() : undefined;
    if (!name || !OPERATIONS.has(name)) {
      throw new AppError('invalid_syntax', `Operations[${i}].op must be add, remove or replace.`);
    }
    if (path !== undefined && typeof path !== 'string') throw new AppError('invalid_syntax', `Operations[${i}].path must be a string.`);
    if (typeof path === 'string') parseScimPath(path);
    if (path === undefined && name === 'remove') throw new AppError('no_target', `Operations[${i}]: remove needs a path.`);
    if (name !== 'remove' && value === undefined) throw new AppError('invalid_value', `Operations[${i}] needs a value.`);
    return { op: name as PatchOperation['op'], ...(path === undefined ? {} : { path }), ...(value === undefined ? {} : { value }) };
  });
}

/** The attribute path an operation's value belongs to, without its value filter. */
function valuePathOf(path: string): string {
  const parsed = parseScimPath(path);
  return parsed.subAttribute ? `${parsed.attribute}.${parsed.subAttribute}` : parsed.attribute;
}

/** An operation's value with booleans normalised and, for path-less values, unknown attributes left out. */
function normalizedValue(operation: PatchOperation): unknown {
  if (operation.value === undefined) return undefined;
  if (operation.path !== undefined) return normalizeBooleans(userDefinition, operation.value, valuePathOf(operation.path));
  if (typeof operation.value !== 'object' || operation.value === null || Array.isArray(operation.value)) return operation.value;
  return normalizeBooleans(userDefinition, withoutUnknownAttributes(userDefinition, operation.value as Record<string, unknown>));
}

/**
 * Applies PATCH operations to a User resource (as {@link toUserResource} renders it) and
 * returns the changed resource, or undefined when they change nothing. Pure: nothing is
 * stored. Source: RFC 7644 §3.5.2.
 *
 * @throws AppError `invalid_path`, `no_target`, `mutability`, `invalid_value`,
 *   `invalid_syntax` (400) as the operations deserve (e.g. a path the User schema lacks, a
 *   filter matching no value on `replace`, a change of `id`).
 */
export async function patchUserResource(
  resource: Record<string, unknown>,
  operations: readonly PatchOperation[],
): Promise<Record<string, unknown> | undefined> {
  const message = {
    schemas: [URN.patchOp] as [typeof URN.patchOp],
    Operations: operations.map((operation) => {
      const value = normalizedValue(operation);
      return { ...operation, ...(value === undefined ? {} : { value }) };
    }),
  };
  return fromLibraryErrors(async () => {
    const instance = new SCIMMY.Schemas.User(resource, 'out');
    const patched = await new SCIMMY.Messages.PatchOp(message).apply(instance);
    return patched === undefined ? undefined : (JSON.parse(JSON.stringify(patched)) as Record<string, unknown>);
  });
}
