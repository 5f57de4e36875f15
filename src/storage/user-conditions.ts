import { sql, type SQL } from 'drizzle-orm';
import type {
  ComparisonOperator,
  ConditionValue,
  ScimAttributePath,
  UserCondition,
  UserField,
  UserSort,
} from '../core/users/user-query.ts';
import { isUuid } from './uuid.ts';
import { foldEmail } from '../core/users/email.ts';

/*
 * Compiles the domain's UserCondition into SQL over the users row aliased `u`. Every value is
 * a bound parameter; the only text put into the statement is built here from fixed pieces and
 * from SCIM attribute names checked against SCIM_NAME. Text columns are compared through the
 * `(lower(column) collate "C")` expressions the prefix indexes are built on, so that an
 * equality or prefix on email or a name is an index range at any workspace size.
 */

/**
 * A SCIM attribute name as it may appear in a JSON path: RFC 7643 §2.1 ATTRNAME (plus `$` of
 * `$ref`), or a schema URN, the key of an extension's attributes (RFC 7643 §3.3).
 */
const SCIM_NAME = /^(?:[A-Za-z$][A-Za-z0-9_$-]*|urn:[A-Za-z0-9:._-]+)$/;

/**
 * Text columns and how a case-insensitive comparison reads them (the prefix indexes). `foldValue`:
 * how the compared value is folded instead of by lower() — for emails, the ASCII letters only
 * (`foldEmail`, docs/security.md, "One spelling of an email"), so that U+212A KELVIN SIGN and
 * the like, which lower() folds onto ASCII letters, match no stored (ASCII) email.
 */
const TEXT_COLUMNS: Partial<Record<UserField, { exact: SQL; folded: SQL; caseExactByDefault: boolean; foldValue?: (value: string) => string }>> = {
  email: { exact: sql`u.email`, folded: sql`(lower(u.email) collate "C")`, caseExactByDefault: false, foldValue: foldEmail },
  firstName: { exact: sql`u.first_name`, folded: sql`(lower(u.first_name) collate "C")`, caseExactByDefault: false },
  lastName: { exact: sql`u.last_name`, folded: sql`(lower(u.last_name) collate "C")`, caseExactByDefault: false },
  externalId: { exact: sql`u.external_id`, folded: sql`(lower(u.external_id) collate "C")`, caseExactByDefault: true },
  role: { exact: sql`u.role`, folded: sql`lower(u.role)`, caseExactByDefault: true },
  status: { exact: sql`u.status`, folded: sql`lower(u.status)`, caseExactByDefault: true },
};

/** `value` with LIKE's wildcards and escape character escaped (backslash is LIKE's default escape). */
function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** The text form of a condition value (instants as RFC 3339, booleans and numbers as JSON). */
function asText(value: ConditionValue | undefined): string | null {
  if (value === undefined || value === null) return null;
  if (value instanceof Date) return value.toISOString();
  return String(value);
}

/**
 * `left op value` for text, `left` already folded when case-insensitive (then `value` is
 * folded the same way). `pr` is "present": not null and not empty.
 */
function compareText(left: SQL, op: ComparisonOperator, value: string | null, fold: boolean): SQL {
  if (op === 'pr') return sql`(${left} is not null and ${left} <> '')`;
  if (value === null) return op === 'ne' ? sql`(${left} is not null)` : op === 'eq' ? sql`(${left} is null)` : sql`false`;
  const right = fold ? sql`(lower(${value}) collate "C")` : sql`(${value}::text collate "C")`;
  const pattern = (before: string, after: string) =>
    fold ? sql`(lower(${before + escapeLike(value) + after}) collate "C")` : sql`${before + escapeLike(value) + after}`;
  switch (op) {
    case 'eq':
      return sql`${left} = ${right}`;
    case 'ne':
      return sql`(${left} is null or ${left} <> ${right})`;
    case 'co':
      return sql`${left} like ${pattern('%', '%')}`;
    case 'sw':
      return sql`${left} like ${pattern('', '%')}`;
    case 'ew':
      return sql`${left} like ${pattern('%', '')}`;
    case 'gt':
      return sql`${left} > ${right}`;
    case 'ge':
      return sql`${left} >= ${right}`;
    case 'lt':
      return sql`${left} < ${right}`;
    case 'le':
      return sql`${left} <= ${right}`;
  }
}

/** `column op instant` for the timestamp columns; `value` must be a Date (else nothing matches). */
function compareInstant(column: SQL, op: ComparisonOperator, value: ConditionValue | undefined): SQL {
  if (op === 'pr') return sql`true`;
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) return op === 'ne' ? sql`true` : sql`false`;
  const at = value.toISOString();
  const operators: Partial<Record<ComparisonOperator, string>> = { eq: '=', ne: '<>', gt: '>', ge: '>=', lt: '<', le: '<=' };
  const operator = operators[op];
  // Text operators (co, sw, ew) on an instant match nothing.
  return operator ? sql`${column} ${sql.raw(operator)} ${at}::timestamptz` : sql`false`;
}

/** `public_id op value`: equality by UUID (an index look-up), anything else on its text. */
function compareId(op: ComparisonOperator, value: ConditionValue | undefined): SQL {
  const text = asText(value);
  if ((op === 'eq' || op === 'ne') && text !== null) {
    if (!isUuid(text)) return op === 'eq' ? sql`false` : sql`true`;
    return op === 'eq' ? sql`u.public_id = ${text}::uuid` : sql`u.public_id <> ${text}::uuid`;
  }
  return compareText(sql`(u.public_id::text collate "C")`, op, text === null ? null : text.toLowerCase(), false);
}

/** True when some app of the user satisfies `predicate` (over `a.product`, `a.role`). */
function anyApp(predicate: SQL): SQL {
  return sql`exists (select 1 from user_apps a where a.workspace_id = u.workspace_id and a.user_id = u.id and ${predicate})`;
}

/** `app op value` over `"product:role"`; an exact `eq` is an index look-up by product and role. */
function compareApp(op: ComparisonOperator, value: ConditionValue | undefined, caseExact: boolean): SQL {
  const text = asText(value);
  const colon = text?.indexOf(':') ?? -1;
  if (op === 'eq' && caseExact && text !== null && colon > 0) {
    return anyApp(sql`a.product = ${text.slice(0, colon)} and a.role = ${text.slice(colon + 1)}`);
  }
  if (op === 'ne') return sql`not ${compareApp('eq', value, caseExact)}`;
  const left = caseExact ? sql`((a.product || ':' || a.role) collate "C")` : sql`(lower(a.product || ':' || a.role) collate "C")`;
  return anyApp(compareText(left, op, text, !caseExact));
}

/** `product op value` over the products of the user's apps. */
function compareProduct(op: ComparisonOperator, value: ConditionValue | undefined, caseExact: boolean): SQL {
  if (op === 'ne') return sql`not ${compareProduct('eq', value, caseExact)}`;
  const left = caseExact ? sql`(a.product collate "C")` : sql`(lower(a.product) collate "C")`;
  return anyApp(compareText(left, op, asText(value), !caseExact));
}

/**
 * Where SCIM attribute paths start: the user's `scim_attributes`, or inside an `any`
 * condition one element of an array of it (`depth` numbers the nested element aliases).
 */
interface JsonScope {
  readonly json: SQL;
  readonly depth: number;
}

/** The scope of conditions on the user itself. */
const USER_SCOPE: JsonScope = { json: sql`u.scim_attributes`, depth: 0 };

/** The SQL/JSON lax path of a SCIM attribute path, or undefined when a name is not a SCIM name. */
function jsonPathOf(names: readonly string[], suffix = ''): string | undefined {
  if (names.length === 0 || !names.every((name) => SCIM_NAME.test(name))) return undefined;
  return `lax $${names.map((name) => `."${name}"`).join('')}${suffix}`;
}

/**
 * `path op value` inside `scim_attributes` (or the element of `scope`): the path's values
 * (arrays searched element by element, SQL/JSON lax mode) compared as text.
 */
function compareScimAttribute(
  path: ScimAttributePath,
  op: ComparisonOperator,
  value: ConditionValue | undefined,
  caseExact: boolean,
  scope: JsonScope,
): SQL {
  const jsonPath = jsonPathOf(path.scimAttribute);
  if (!jsonPath) return sql`false`;
  const values = sql`jsonb_path_query(coalesce(${scope.json}, '{}'::jsonb), ${jsonPath}::jsonpath) as v(item)`;
  const itemText = caseExact ? sql`((v.item #>> '{}') collate "C")` : sql`(lower(v.item #>> '{}') collate "C")`;
  if (op === 'pr') {
    return sql`exists (select 1 from ${values} where v.item not in ('null'::jsonb, '""'::jsonb, '[]'::jsonb, '{}'::jsonb))`;
  }
  if (op === 'ne') return sql`not ${compareScimAttribute(path, 'eq', value, caseExact, scope)}`;
  return sql`exists (select 1 from ${values} where ${compareText(itemText, op, asText(value), !caseExact)})`;
}

/** True when some element of the array at `path` (in `scope`) satisfies `condition`. */
function anyElement(path: readonly string[], condition: UserCondition, scope: JsonScope): SQL {
  const jsonPath = jsonPathOf(path, '[*]');
  if (!jsonPath) return sql`false`;
  const depth = scope.depth + 1;
  const alias = sql.identifier(`e${depth}`);
  const inner = conditionIn(condition, { json: sql`${alias}.item`, depth });
  return sql`exists (select 1 from jsonb_path_query(coalesce(${scope.json}, '{}'::jsonb), ${jsonPath}::jsonpath) as ${alias}(item) where ${inner})`;
}

/** `public_id` is one of `values` (texts that are no UUID can match nothing). */
function idIn(values: readonly string[]): SQL {
  const ids = [...new Set(values.filter((v) => isUuid(v)).map((v) => v.toLowerCase()))];
  if (ids.length === 0) return sql`false`;
  return sql`u.public_id = any(${sql.param(ids)}::uuid[])`;
}

/** The SQL of one comparison. */
function comparison(
  field: UserField | ScimAttributePath,
  op: ComparisonOperator,
  value: ConditionValue | undefined,
  caseExact: boolean | undefined,
  scope: JsonScope,
): SQL {
  if (typeof field === 'object') return compareScimAttribute(field, op, value, caseExact ?? false, scope);
  switch (field) {
    case 'id':
      return compareId(op, value);
    case 'createdAt':
      return compareInstant(sql`u.created_at`, op, value);
    case 'updatedAt':
      return compareInstant(sql`u.updated_at`, op, value);
    case 'expiresAt':
      return compareInstant(sql`u.expires_at`, op, value);
    case 'lastSeenAt':
      // The expression of the index users__workspace_last_seen.
      return compareInstant(sql`coalesce(u.last_active_at, u.created_at)`, op, value);
    case 'app':
      return compareApp(op, value, caseExact ?? false);
    case 'product':
      return compareProduct(op, value, caseExact ?? false);
    default: {
      const column = TEXT_COLUMNS[field]!;
      const exact = caseExact ?? column.caseExactByDefault;
      const text = asText(value);
      // Exact equality needs no collation (PostgreSQL's are deterministic), and without one the
      // plain indexes serve it (e.g. the partial index of active owners for role = 'owner').
      if (exact && text !== null && op === 'eq') return sql`${column.exact} = ${text}`;
      if (exact && text !== null && op === 'ne') return sql`(${column.exact} is null or ${column.exact} <> ${text})`;
      if (exact) return compareText(sql`(${column.exact} collate "C")`, op, text, false);
      if (column.foldValue) return compareText(column.folded, op, text === null ? null : column.foldValue(text), false);
      return compareText(column.folded, op, text, true);
    }
  }
}

/**
 * The SQL of `condition` over the users row `u` (and its apps through `user_apps`), with
 * every value bound as a parameter. Source: RFC 7644 §3.4.2.2 (operators, `not` is true where
 * its operand is false or unknown); docs/contract.md Part B, Finding users.
 */
export function conditionSql(condition: UserCondition): SQL {
  return conditionIn(condition, USER_SCOPE);
}

/** {@link conditionSql} with SCIM attribute paths starting at `scope`. */
function conditionIn(condition: UserCondition, scope: JsonScope): SQL {
  switch (condition.op) {
    case 'true':
      return sql`true`;
    case 'false':
      return sql`false`;
    case 'and':
    case 'or': {
      if (condition.conditions.length === 0) return condition.op === 'and' ? sql`true` : sql`false`;
      const parts = condition.conditions.map((c) => sql`(${conditionIn(c, scope)})`);
      return sql`(${sql.join(parts, sql.raw(` ${condition.op} `))})`;
    }
    case 'not':
      return sql`not coalesce((${conditionIn(condition.condition, scope)}), false)`;
    case 'in':
      return idIn(condition.values);
    case 'any':
      return anyElement(condition.path, condition.condition, scope);
    default:
      return comparison(condition.field, condition.op, condition.value, condition.caseExact, scope);
  }
}

/** Fields whose case-insensitive form has a `(workspace_id, (lower(column) collate "C"))` index (schema.ts). */
const PREFIX_INDEXED: ReadonlySet<UserField> = new Set(['email', 'firstName', 'lastName']);

/** True when the SQL of `condition` is one range of a prefix index: a case-insensitive `eq` or `sw` with a text value on one of {@link PREFIX_INDEXED}. */
function isIndexRange(condition: UserCondition): boolean {
  if (condition.op !== 'eq' && condition.op !== 'sw') return false;
  const { field, value, caseExact } = condition;
  return typeof field === 'string' && PREFIX_INDEXED.has(field) && !(caseExact ?? false) && typeof value === 'string';
}

/** `condition` as the list of conditions its top-level `op` (`and` or `or`, nested alike) combines. */
function flatten(condition: UserCondition, op: 'and' | 'or'): UserCondition[] {
  return condition.op === op ? condition.conditions.flatMap((c) => flatten(c, op)) : [condition];
}

/**
 * Index ranges every user matching `condition` lies in: the first of its top-level AND-ed
 * conditions that is one index range, or an OR of them (e.g. the `q` search: a prefix of the
 * email, the first or the last name), as its ranges; undefined when there is none. The users
 * in the union of these ranges are a superset of the matches, which `condition` then narrows
 * (storage/users.queries.ts, findMatching).
 */
export function indexRanges(condition: UserCondition): UserCondition[] | undefined {
  for (const conjunct of flatten(condition, 'and')) {
    const ranges = flatten(conjunct, 'or');
    if (ranges.length > 0 && ranges.every(isIndexRange)) return ranges;
  }
  return undefined;
}

/** The ORDER BY of a listing over the users row `alias` (creation order breaks ties). */
export function orderSql(sort: UserSort, alias: string): SQL {
  const row = sql.identifier(alias);
  switch (sort) {
    case 'created_at':
      return sql`${row}.id asc`;
    case '-created_at':
      return sql`${row}.id desc`;
    // lower(email) is unique within a workspace: no tie to break, and the index gives the order.
    case 'email':
      return sql`(lower(${row}.email) collate "C") asc`;
    case '-email':
      return sql`(lower(${row}.email) collate "C") desc`;
    // Users that never expire come last either way; creation order breaks ties.
    case 'expires_at':
      return sql`${row}.expires_at asc nulls last, ${row}.id asc`;
    case '-expires_at':
      return sql`${row}.expires_at desc nulls last, ${row}.id asc`;
  }
}
