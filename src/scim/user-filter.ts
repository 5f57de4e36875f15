import type { Filter } from 'scim2-parse-filter';
import { AppError } from '../core/errors.ts';
import type { ComparisonOperator, ConditionValue, UserCondition, UserField } from '../core/users/user-query.ts';
import { URN } from './constants.ts';
import { resolveAttribute, userDefinition, type ResolvedAttribute } from './schema-definitions.ts';

/*
 * SCIM filter tree (scim2-parse-filter) → the domain's UserCondition, which storage compiles
 * into one SQL statement (never filtered in memory). Attributes wum models as columns map to
 * them (`userName` → email, `name.givenName` → first name, `active` → status, `roles.value` →
 * the `"product:role"` apps, `meta.created` → creation time, …); every other attribute of the
 * User schema is a path into the stored SCIM attributes. `emails` are the derived work entry
 * (the email) and the stored further entries, so an email filter tests both.
 */

type Comparison = Extract<Filter, { attrPath: string; op: ComparisonOperator }>;

const TRUE: UserCondition = { op: 'true' };
const FALSE: UserCondition = { op: 'false' };

/** The derived `emails` entry of every user: the email, as the work and primary address. */
const DERIVED_EMAIL = { type: 'work', primary: true } as const;

function invalid(detail: string): AppError {
  return new AppError('invalid_filter', detail);
}

/** The attribute at `attrPath` of the User schema. */
function resolve(attrPath: string): ResolvedAttribute & { key: string } {
  const resolved = resolveAttribute(userDefinition, attrPath);
  if (!resolved?.attribute) throw invalid(`The User schema has no attribute "${attrPath}".`);
  return { ...resolved, key: resolved.path.join('.') };
}

/** RFC 7644 §3.4.2.2: `gt`/`ge`/`lt`/`le` and the text operators need ordered or textual values. */
function checkOperator(type: string, op: ComparisonOperator, attrPath: string): void {
  const textual = op === 'co' || op === 'sw' || op === 'ew';
  const ordered = op === 'gt' || op === 'ge' || op === 'lt' || op === 'le';
  if ((type === 'boolean' || type === 'binary' || type === 'complex') && (textual || ordered)) {
    throw invalid(`"${op}" cannot compare the ${type} attribute "${attrPath}".`);
  }
  if ((type === 'dateTime' || type === 'integer' || type === 'decimal') && textual) {
    throw invalid(`"${op}" cannot compare the ${type} attribute "${attrPath}".`);
  }
}

/** The comparison value as the attribute's type reads it. */
function valueOf(type: string, filter: Comparison): ConditionValue | undefined {
  if (filter.op === 'pr') return undefined;
  const value = filter.compValue;
  if (value === null) return null;
  switch (type) {
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (typeof value === 'string' && /^(?:true|false)$/i.test(value)) return value.toLowerCase() === 'true';
      throw invalid(`"${filter.attrPath}" is a boolean: compare it with true or false.`);
    case 'dateTime': {
      const at = typeof value === 'string' ? new Date(value) : undefined;
      if (!at || Number.isNaN(at.getTime())) throw invalid(`"${filter.attrPath}" is a dateTime: compare it with an RFC 3339 time.`);
      return at;
    }
    case 'integer':
    case 'decimal':
      if (typeof value !== 'number') throw invalid(`"${filter.attrPath}" is a number: compare it with a number.`);
      return value;
    default:
      return String(value);
  }
}

/** A comparison of a column of the user. */
function column(field: UserField, op: ComparisonOperator, value: ConditionValue | undefined, caseExact: boolean): UserCondition {
  return value === undefined ? { op, field, caseExact } : { op, field, value, caseExact };
}

/** A comparison of a stored SCIM attribute (`path` relative to the user or to an element). */
function stored(path: readonly string[], op: ComparisonOperator, value: ConditionValue | undefined, caseExact: boolean): UserCondition {
  const field = { scimAttribute: path };
  return value === undefined ? { op, field, caseExact } : { op, field, value, caseExact };
}

/** A comparison of a value every user has the same (`actual`), decided here. */
function constant(actual: string | boolean | null, op: ComparisonOperator, value: ConditionValue | undefined, caseExact: boolean): UserCondition {
  if (op === 'pr') return actual === null ? FALSE : TRUE;
  if (actual === null || value === null || value === undefined) {
    const equal = actual === (value ?? null);
    return op === 'eq' ? (equal ? TRUE : FALSE) : op === 'ne' ? (equal ? FALSE : TRUE) : FALSE;
  }
  const fold = (v: unknown) => (caseExact ? String(v) : String(v).toLowerCase());
  const [a, b] = [fold(actual), fold(value instanceof Date ? value.toISOString() : value)];
  const results: Record<Exclude<ComparisonOperator, 'pr'>, boolean> = {
    eq: a === b,
    ne: a !== b,
    co: a.includes(b),
    sw: a.startsWith(b),
    ew: a.endsWith(b),
    gt: a > b,
    ge: a >= b,
    lt: a < b,
    le: a <= b,
  };
  return results[op] ? TRUE : FALSE;
}

/** The `active` attribute as a status comparison. */
function activeCondition(op: ComparisonOperator, value: ConditionValue | undefined): UserCondition {
  if (op === 'pr') return TRUE;
  if (value === null) return op === 'ne' ? TRUE : FALSE;
  const status = value === true ? 'active' : 'deactivated';
  return { op: op === 'ne' ? 'ne' : 'eq', field: 'status', value: status, caseExact: true };
}

/** A comparison of one attribute of the User (not inside a value path). */
function comparison(filter: Comparison): UserCondition {
  let resolved = resolve(filter.attrPath);
  // A multi-valued complex attribute compared as a whole means its `value` (RFC 7644 §3.4.2.2).
  if (resolved.attribute!.type === 'complex' && filter.op !== 'pr') {
    if (!resolved.attribute!.config.multiValued) throw invalid(`"${filter.attrPath}" is complex: compare one of its sub-attributes.`);
    resolved = resolve(`${filter.attrPath}.value`);
  }
  const attribute = resolved.attribute!;
  checkOperator(attribute.type, filter.op, filter.attrPath);
  const value = valueOf(attribute.type, filter);
  const caseExact = attribute.config.caseExact === true;
  const { op } = filter;
  switch (resolved.key) {
    case 'id':
      return column('id', op, value, true);
    case 'externalId':
      return column('externalId', op, value, true);
    case 'userName':
      return column('email', op, value, false);
    case 'name.givenName':
      return column('firstName', op, value, false);
    case 'name.familyName':
      return column('lastName', op, value, false);
    case 'active':
      return activeCondition(op, value);
    case 'meta.created':
      return column('createdAt', op, value, true);
    case 'meta.lastModified':
      return column('updatedAt', op, value, true);
    case 'meta.resourceType':
      return constant('User', op, value, true);
    case 'emails':
    case 'emails.value':
      return { op: 'or', conditions: [column('email', op, value, false), stored(['emails', 'value'], op, value, false)] };
    case 'emails.type':
      return { op: 'or', conditions: [constant(DERIVED_EMAIL.type, op, value, false), stored(['emails', 'type'], op, value, false)] };
    case 'emails.primary':
      return { op: 'or', conditions: [constant(DERIVED_EMAIL.primary, op, value, true), stored(['emails', 'primary'], op, value, true)] };
    case 'roles':
    case 'roles.value':
      return column('app', op, value, true);
    case 'roles.display':
    case 'roles.type':
    case 'roles.primary':
      return constant(null, op, value, false);
    case `${URN.wumUser}.workspaceRole`:
      return column('role', op, value, true);
    default:
      break;
  }
  if (resolved.path[0] === 'meta' || resolved.path[0] === 'groups' || resolved.path[0] === 'password') {
    throw invalid(`Filtering on "${filter.attrPath}" is not supported.`);
  }
  if (resolved.key === 'schemas') throw invalid('Filtering on "schemas" is not supported.');
  return stored(resolved.path, op, value, caseExact);
}

/** A filter inside `attribute[…]`, over one element: its sub-attributes become paths in the element. */
function elementCondition(filter: Filter, parent: ResolvedAttribute, parentPath: string, derived?: (f: Comparison) => UserCondition): UserCondition {
  switch (filter.op) {
    case 'and':
    case 'or':
      return { op: filter.op, conditions: filter.filters.map((f) => elementCondition(f, parent, parentPath, derived)) };
    case 'not':
      return { op: 'not', condition: elementCondition(filter.filter, parent, parentPath, derived) };
    case '[]':
      throw invalid(`A value filter cannot hold another one ("${filter.attrPath}[…]" inside "${parentPath}[…]").`);
    default: {
      const resolved = resolve(`${parentPath}.${filter.attrPath}`);
      const attribute = resolved.attribute!;
      checkOperator(attribute.type, filter.op, filter.attrPath);
      if (derived) return derived(filter);
      const value = valueOf(attribute.type, filter);
      return stored(resolved.path.slice(parent.path.length), filter.op, value, attribute.config.caseExact === true);
    }
  }
}

/** The derived email entry's answer to one comparison inside `emails[…]`. */
function derivedEmail(filter: Comparison): UserCondition {
  const resolved = resolve(`emails.${filter.attrPath}`);
  const value = valueOf(resolved.attribute!.type, filter);
  switch (resolved.path[1]) {
    case 'value':
      return column('email', filter.op, value, false);
    case 'type':
      return constant(DERIVED_EMAIL.type, filter.op, value, false);
    case 'primary':
      return constant(DERIVED_EMAIL.primary, filter.op, value, true);
    default:
      return constant(null, filter.op, value, false);
  }
}

/** A role's answer to one comparison inside `roles[…]`: only `value` is kept (`"product:role"`). */
function roleComparison(filter: Comparison): UserCondition {
  const resolved = resolve(`roles.${filter.attrPath}`);
  const value = valueOf(resolved.attribute!.type, filter);
  return resolved.path[1] === 'value' ? column('app', filter.op, value, true) : constant(null, filter.op, value, false);
}

/** `attribute[filter]`: some element of the attribute satisfies the filter. */
function valuePath(filter: Extract<Filter, { op: '[]' }>): UserCondition {
  const parent = resolve(filter.attrPath);
  if (parent.attribute!.type !== 'complex') throw invalid(`"${filter.attrPath}" is not complex: it has no values to filter.`);
  const path = parent.key;
  if (path === 'emails') {
    return {
      op: 'or',
      conditions: [
        elementCondition(filter.valFilter, parent, path, derivedEmail),
        { op: 'any', path: ['emails'], condition: elementCondition(filter.valFilter, parent, path) },
      ],
    };
  }
  if (path === 'roles') return elementCondition(filter.valFilter, parent, path, roleComparison);
  if (path === 'name' || path === 'groups' || !parent.attribute!.config.multiValued) {
    if (path === 'groups') throw invalid('Filtering on "groups" is not supported.');
    // A single complex attribute: its one value either satisfies the filter or not.
    return userFilterCondition(prefixed(filter.valFilter, filter.attrPath));
  }
  return { op: 'any', path: parent.path, condition: elementCondition(filter.valFilter, parent, path) };
}

/** `filter` with every attribute path prefixed by `prefix.`. */
function prefixed(filter: Filter, prefix: string): Filter {
  switch (filter.op) {
    case 'and':
    case 'or':
      return { ...filter, filters: filter.filters.map((f) => prefixed(f, prefix)) };
    case 'not':
      return { ...filter, filter: prefixed(filter.filter, prefix) };
    default:
      return { ...filter, attrPath: `${prefix}.${filter.attrPath}` };
  }
}

/**
 * The condition of a SCIM filter over Users: every operator, `and`/`or`/`not`, value paths,
 * attribute names in any case. Source: RFC 7644 §3.4.2.2; docs/contract.md Part B, SCIM 2.0
 * provisioning (the User mapping).
 *
 * @throws AppError `invalid_filter` (400) for an attribute the User schema lacks (or that
 *   cannot be filtered: `password`, `groups`, `meta.location`, `meta.version`), an operator
 *   the attribute's type does not allow, or a value of the wrong type.
 */
export function userFilterCondition(filter: Filter): UserCondition {
  switch (filter.op) {
    case 'and':
    case 'or':
      return { op: filter.op, conditions: filter.filters.map(userFilterCondition) };
    case 'not':
      return { op: 'not', condition: userFilterCondition(filter.filter) };
    case '[]':
      return valuePath(filter);
    default:
      return comparison(filter);
  }
}
