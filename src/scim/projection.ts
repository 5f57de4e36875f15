import type SCIMMY from 'scimmy';
import { AppError } from '../core/errors.ts';
import { matchesFilter, parseScimPath, type Filter } from './filter.ts';
import { resolveAttribute } from './schema-definitions.ts';

/*
 * `attributes` and `excludedAttributes` (RFC 7644 §3.4.2.5, §3.9): which attributes of a
 * resource a response shows. `schemas` and `id` are always shown. An attribute with a value
 * filter (`emails[type eq "work"]`, as Microsoft's test collection asks) shows the values
 * that match.
 */

/** One attribute a projection names: canonical path, and the value filter if any. */
interface ProjectedAttribute {
  readonly path: readonly string[];
  readonly filter?: Filter;
}

/** The attributes of a resource a response shows. */
export interface Projection {
  readonly attributes?: readonly ProjectedAttribute[];
  readonly excludedAttributes?: readonly ProjectedAttribute[];
}

const ALWAYS = new Set(['schemas', 'id']);

/** A comma-separated attribute list; names the schema does not have are ignored. */
function readList(definition: SCIMMY.Types.SchemaDefinition, text: string | undefined, parameter: string): ProjectedAttribute[] | undefined {
  if (text === undefined) return undefined;
  const attributes: ProjectedAttribute[] = [];
  for (const item of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    let parsed;
    try {
      parsed = parseScimPath(item);
    } catch {
      throw new AppError('invalid_value', `${parameter}: "${item}" is not an attribute path.`);
    }
    const name = parsed.subAttribute ? `${parsed.attribute}.${parsed.subAttribute}` : parsed.attribute;
    const resolved = resolveAttribute(definition, name);
    if (resolved) attributes.push({ path: resolved.path, ...(parsed.filter ? { filter: parsed.filter } : {}) });
  }
  return attributes;
}

/**
 * Reads the `attributes` and `excludedAttributes` parameters against a schema.
 * @throws AppError `invalid_value` (400) for an item that is not an attribute path.
 */
export function readProjection(
  definition: SCIMMY.Types.SchemaDefinition,
  parameters: { attributes?: string | undefined; excludedAttributes?: string | undefined },
): Projection {
  const attributes = readList(definition, parameters.attributes, 'attributes');
  const excludedAttributes = readList(definition, parameters.excludedAttributes, 'excludedAttributes');
  return { ...(attributes ? { attributes } : {}), ...(excludedAttributes ? { excludedAttributes } : {}) };
}

/** True when the projection shows the top-level attribute `name` at all (to skip work, e.g. group members). */
export function shows(projection: Projection, name: string): boolean {
  if (projection.attributes) return projection.attributes.some((a) => a.path[0] === name);
  return !projection.excludedAttributes?.some((a) => a.path.length === 1 && a.path[0] === name);
}

type Json = Record<string, unknown>;

/** The part of `value` that `path` (relative to it) names, as a value of the same shape, or undefined. */
function pick(value: unknown, path: readonly string[]): unknown {
  if (path.length === 0) return value;
  if (Array.isArray(value)) {
    const picked = value.map((item) => pick(item, path)).filter((item) => item !== undefined);
    return picked.length > 0 ? picked : undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const [head, ...rest] = path;
  const child = (value as Json)[head!];
  if (child === undefined) return undefined;
  const picked = pick(child, rest);
  return picked === undefined ? undefined : { [head!]: picked };
}

/** Deep merge of picked parts (objects merge; arrays of the same attribute merge by index). */
function merge(into: unknown, part: unknown): unknown {
  if (into === undefined) return part;
  if (Array.isArray(into) && Array.isArray(part)) return into.map((item, i) => merge(item, part[i]));
  if (typeof into === 'object' && into !== null && typeof part === 'object' && part !== null) {
    const merged: Json = { ...(into as Json) };
    for (const [key, value] of Object.entries(part as Json)) merged[key] = merge(merged[key], value);
    return merged;
  }
  return part;
}

/** `value` without what `path` names. */
function omit(value: unknown, path: readonly string[]): unknown {
  if (Array.isArray(value)) return value.map((item) => omit(item, path));
  if (typeof value !== 'object' || value === null || path.length === 0) return value;
  const [head, ...rest] = path;
  const { [head!]: child, ...others } = value as Json;
  if (rest.length === 0 || child === undefined) return others;
  return { ...others, [head!]: omit(child, rest) };
}

/**
 * The resource as the projection shows it. Source: RFC 7644 §3.4.2.5 (`attributes` replaces
 * the default set, `excludedAttributes` removes from it; attributes returned "always" stay).
 */
export function project(resource: Json, projection: Projection): Json {
  let shown: Json = resource;
  if (projection.attributes) {
    let picked: unknown = Object.fromEntries(Object.entries(resource).filter(([key]) => ALWAYS.has(key)));
    for (const attribute of projection.attributes) {
      // A filter applies to the values of the attribute the path starts with (`emails[…].value`).
      const part = attribute.filter ? pickFiltered(resource, attribute, attribute.filter) : pick(resource, attribute.path);
      if (part !== undefined) picked = merge(picked, part);
    }
    shown = picked as Json;
  }
  for (const attribute of projection.excludedAttributes ?? []) {
    if (!ALWAYS.has(attribute.path[0]!)) shown = omit(shown, attribute.path) as Json;
  }
  return shown;
}

/** `attribute[filter]` (or `attribute[filter].sub`): the matching values of the multi-valued attribute. */
function pickFiltered(resource: Json, attribute: ProjectedAttribute, filter: Filter): unknown {
  // The filtered attribute is the path's first name, or the first two for an extension attribute.
  const depth = attribute.path[0]!.startsWith('urn:') ? 2 : 1;
  const head = attribute.path.slice(0, depth);
  let values: unknown = resource;
  for (const name of head) values = typeof values === 'object' && values !== null ? (values as Json)[name] : undefined;
  if (!Array.isArray(values)) return undefined;
  const matching = values.filter((item) => matchesFilter(item, filter));
  const shown = pick(matching, attribute.path.slice(depth));
  if (shown === undefined || (Array.isArray(shown) && shown.length === 0)) return undefined;
  return head.reduceRight((inner: unknown, name) => ({ [name]: inner }), shown);
}
