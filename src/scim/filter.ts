import { Tester, type Compare, type Filter } from 'scim2-parse-filter';
import { Tokens, parseFilter, tokenizer, type Token } from 'scim2-parse-filter/lib/src/parser.js';
import { AppError } from '../core/errors.ts';
import { MAX_FILTER_COMPARISONS, MAX_FILTER_DEPTH, MAX_FILTER_LENGTH } from './constants.ts';

export type { Filter } from 'scim2-parse-filter';

/*
 * The filter grammar of RFC 7644 §3.4.2.2 comes from scim2-parse-filter: its tokenizer and
 * parser build the tree (`and`/`or`/`not`, comparisons, `attr[valFilter]` value paths) that
 * wum translates. One leniency is added before parsing, on the tokens: a comparison value
 * that is a bare word (`name.familyName eq Employee`, `meta.created gt
 * 2015-10-10T14:38:21.8617979-07:00`, as Microsoft's SCIM test collection sends them) is read
 * as the quoted string it stands for; `true`, `false`, `null` and numbers keep their meaning.
 */

const COMPARISON_OPERATORS = new Set(['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'lt', 'ge', 'le']);
const JSON_WORDS = new Set(['true', 'false', 'null']);
/** A JSON number (the tokenizer reads `1` before `)` as a word). */
const JSON_NUMBER = /^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$/;

/** `tokens` with bare-word comparison values quoted. */
function quoteBareValues(tokens: readonly Token[]): Token[] {
  return tokens.map((token, i) => {
    const operator = tokens[i - 1];
    const attribute = tokens[i - 2];
    const isValue =
      token.type === 'Word' &&
      operator?.type === 'Word' &&
      COMPARISON_OPERATORS.has(operator.literal.toLowerCase()) &&
      attribute?.type === 'Word' &&
      !JSON_WORDS.has(token.literal.toLowerCase()) &&
      !JSON_NUMBER.test(token.literal);
    return isValue ? { type: 'Quoted', literal: JSON.stringify(token.literal) } : token;
  });
}

/** How many comparisons (leaves) `filter` has. */
function comparisons(filter: Filter): number {
  switch (filter.op) {
    case 'and':
    case 'or':
      return filter.filters.reduce((n, f) => n + comparisons(f), 0);
    case 'not':
      return comparisons(filter.filter);
    case '[]':
      return comparisons(filter.valFilter);
    default:
      return 1;
  }
}

/** The deepest nesting of `(…)` and `[…]` outside quoted strings, read without recursion. */
function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (quoted) {
      if (c === '\\') i += 1;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === '(' || c === '[') deepest = Math.max(deepest, ++depth);
    else if (c === ')' || c === ']') depth -= 1;
  }
  return deepest;
}

/** Parses with the library, all of the text or nothing. */
function parseAll(text: string): Filter {
  const tokens = new Tokens(quoteBareValues(tokenizer(text)));
  const filter = parseFilter(tokens);
  if (tokens.peek().type !== 'EOT') throw new Error(`unexpected "${tokens.peek().literal}"`);
  return filter;
}

/**
 * Parses a SCIM filter into its tree. Attribute names are left as written (resolving them is
 * the caller's, against a schema). Source: RFC 7644 §3.4.2.2.
 *
 * @throws AppError `invalid_filter` (400) for text that is not a filter, longer than
 *   {@link MAX_FILTER_LENGTH} characters, nested deeper than {@link MAX_FILTER_DEPTH} or with
 *   more than {@link MAX_FILTER_COMPARISONS} comparisons. Only the parser's own syntax messages
 *   are passed on, never an engine's (a stack overflow is reported as too deep).
 */
export function parseScimFilter(text: string): Filter {
  if (text.trim() === '') throw new AppError('invalid_filter', 'The filter is empty.');
  if (text.length > MAX_FILTER_LENGTH) {
    throw new AppError('invalid_filter', `The filter is longer than ${MAX_FILTER_LENGTH} characters.`);
  }
  if (nestingDepth(text) > MAX_FILTER_DEPTH) {
    throw new AppError('invalid_filter', `The filter nests parentheses or value filters deeper than ${MAX_FILTER_DEPTH} levels.`);
  }
  let filter: Filter;
  try {
    filter = parseAll(text);
  } catch (error) {
    // The library throws plain Errors about syntax; anything else (a RangeError) is the engine's.
    const reason = error instanceof Error && error.constructor === Error ? error.message : 'it is too complex';
    throw new AppError('invalid_filter', `The filter is not valid (RFC 7644 §3.4.2.2): ${reason}.`);
  }
  if (comparisons(filter) > MAX_FILTER_COMPARISONS) {
    throw new AppError('invalid_filter', `The filter has more than ${MAX_FILTER_COMPARISONS} comparisons.`);
  }
  return filter;
}

/** A PATCH or projection path: an attribute, optionally a value filter, optionally a sub-attribute. */
export interface ScimPath {
  /** The attribute as written, e.g. `emails`, `name.givenName` or an extension URN path. */
  readonly attribute: string;
  /** The value filter of `attribute[filter]`. */
  readonly filter?: Filter;
  /** The sub-attribute after a value filter: `value` of `emails[type eq "work"].value`. */
  readonly subAttribute?: string;
}

/**
 * Parses an attribute path of RFC 7644 §3.5.2 (`PATH = attrPath / valuePath [subAttr]`) with
 * the same grammar as filters: `members[value eq "…"]` is a filter's value path as it stands,
 * and a plain or sub-attributed path is read as the filter `<path> pr`, which the library
 * turns into exactly those parts.
 *
 * @throws AppError `invalid_path` (400) for anything else.
 */
export function parseScimPath(text: string): ScimPath {
  const invalid = () => new AppError('invalid_path', `"${text}" is not an attribute path (RFC 7644 §3.5.2).`);
  if (text.trim() === '' || text.length > MAX_FILTER_LENGTH) throw invalid();
  let parsed: Filter;
  try {
    parsed = parseAll(text.trimEnd().endsWith(']') ? text : `${text} pr`);
  } catch {
    throw invalid();
  }
  if (parsed.op === '[]') return { attribute: parsed.attrPath, filter: parsed.valFilter };
  if (parsed.op === 'pr') return { attribute: parsed.attrPath };
  if (parsed.op === 'and' && parsed.filters.length === 2) {
    const [valuePath, sub] = parsed.filters;
    if (valuePath?.op === '[]' && sub?.op === 'pr' && sub.attrPath.startsWith(`${valuePath.attrPath}.`)) {
      return { attribute: valuePath.attrPath, filter: valuePath.valFilter, subAttribute: sub.attrPath.slice(valuePath.attrPath.length + 1) };
    }
  }
  throw invalid();
}

/** scim2-parse-filter's in-memory tester with text compared case-insensitively (RFC 7643 §2.2 `caseExact` false). */
class CaseInsensitiveTester extends Tester {
  private static fold(value: unknown): unknown {
    return typeof value === 'string' ? value.toLowerCase() : value;
  }
  override eq(r: unknown, v: Compare['compValue']): boolean {
    return CaseInsensitiveTester.fold(r) === CaseInsensitiveTester.fold(v);
  }
  override ne(r: unknown, v: Compare['compValue']): boolean {
    return !this.eq(r, v);
  }
  /**
   * `co`, `sw` and `ew` on folded text. An attribute without a value matches no textual
   * comparison (RFC 7644 §3.4.2.2); the library's own would call toString() on it and throw.
   */
  private textual(r: unknown, v: Compare['compValue'], compare: (r: unknown, v: Compare['compValue']) => boolean): boolean {
    return r !== undefined && r !== null && compare(CaseInsensitiveTester.fold(r), CaseInsensitiveTester.fold(v) as Compare['compValue']);
  }
  override co(r: unknown, v: Compare['compValue']): boolean {
    return this.textual(r, v, (a, b) => super.co(a, b));
  }
  override sw(r: unknown, v: Compare['compValue']): boolean {
    return this.textual(r, v, (a, b) => super.sw(a, b));
  }
  override ew(r: unknown, v: Compare['compValue']): boolean {
    return this.textual(r, v, (a, b) => super.ew(a, b));
  }
}

const tester = new CaseInsensitiveTester();

/**
 * Whether a JSON value (a resource, or one element of a multi-valued attribute) satisfies a
 * filter, attribute names and text compared case-insensitively. For the small sets wum
 * filters in memory: the elements of one resource's attribute, a workspace's linked groups.
 */
export function matchesFilter(value: unknown, filter: Filter): boolean {
  return tester.test(value, filter);
}
