import SCIMMY from 'scimmy';
import { AppError, type ErrorCode } from '../core/errors.ts';
import { URN } from './constants.ts';

/*
 * The schemas wum serves, as SCIMMY's definitions of RFC 7643: the core User (with the
 * enterprise extension and wum's own) and the core Group. They are the one source for the
 * `/Schemas` documents, for canonical attribute names (RFC 7643 §2.1: names are
 * case-insensitive, so `Primary` is `primary`), for the types input is checked against, and
 * for applying PATCH operations.
 */

type SchemaDefinition = SCIMMY.Types.SchemaDefinition;
type Attribute = SCIMMY.Types.Attribute;

/** wum's extension of the User schema: the workspace role (docs/contract.md Part B, SCIM 2.0 provisioning). */
const wumUserExtension = new SCIMMY.Types.SchemaDefinition(
  'WumUser',
  URN.wumUser,
  "wum's attributes of a user",
  [
    new SCIMMY.Types.Attribute('string', 'workspaceRole', {
      canonicalValues: ['owner', 'non_owner'],
      caseExact: true,
      description: 'The workspace role: owner or non_owner (default non_owner).',
    }),
  ],
);

/** Extends SCIMMY's User schema once per process (its definitions are process-wide singletons). */
function extendedUserDefinition(): SchemaDefinition {
  const definition = SCIMMY.Schemas.User.definition;
  for (const extension of [SCIMMY.Schemas.EnterpriseUser.definition, wumUserExtension]) {
    if (!(definition.attributes as unknown[]).some((a) => a instanceof SCIMMY.Types.SchemaDefinition && a.id === extension.id)) {
      definition.extend(extension, false);
    }
  }
  return definition;
}

/** The User schema with its two extensions. */
export const userDefinition: SchemaDefinition = extendedUserDefinition();
/** The Group schema. */
export const groupDefinition: SchemaDefinition = SCIMMY.Schemas.Group.definition;

/** The extensions of the User schema, by URN. */
export const USER_EXTENSIONS: readonly string[] = [URN.enterpriseUser, URN.wumUser];

/** The schema documents of `GET /Schemas` (RFC 7643 §7), without `meta`. */
export function schemaDocuments(): Record<string, unknown>[] {
  return [
    SCIMMY.Schemas.User.definition.describe(),
    groupDefinition.describe(),
    SCIMMY.Schemas.EnterpriseUser.definition.describe(),
    wumUserExtension.describe(),
  ].map((document) => {
    // The User schema's own document lists its core attributes only; extensions have theirs.
    const { attributes, ...rest } = document as { attributes: Array<{ name: string }> } & Record<string, unknown>;
    return { ...rest, attributes: attributes.filter((a) => !a.name.startsWith('urn:')) };
  });
}

/** An attribute path resolved against a schema. */
export interface ResolvedAttribute {
  /**
   * Canonical names from the resource's root: `['name', 'familyName']`, or for an extension
   * attribute its URN first: `['urn:…:enterprise:2.0:User', 'department']`.
   */
  readonly path: readonly string[];
  /** The attribute's definition; undefined when the path names a whole extension. */
  readonly attribute: Attribute | undefined;
}

/** The schema URNs of `definition` (its own and its extensions'), longest first. */
function urnsOf(definition: SchemaDefinition): string[] {
  // SCIMMY keeps a schema's extensions among its attributes.
  const extensions = (definition.attributes as unknown[])
    .filter((a): a is SchemaDefinition => a instanceof SCIMMY.Types.SchemaDefinition)
    .map((a) => a.id);
  return [definition.id, ...extensions].sort((a, b) => b.length - a.length);
}

/**
 * Resolves an attribute path (`name.FamilyName`, `meta.created`,
 * `urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:Department`, a core attribute
 * prefixed with the core URN) to its canonical names, case-insensitively (RFC 7643 §2.1,
 * RFC 7644 §3.10). Undefined when the schema has no such attribute.
 */
export function resolveAttribute(definition: SchemaDefinition, attrPath: string): ResolvedAttribute | undefined {
  const lower = attrPath.toLowerCase();
  let schemaUrn: string | undefined;
  let rest = attrPath;
  for (const urn of urnsOf(definition)) {
    if (lower === urn.toLowerCase()) {
      return urn === definition.id ? undefined : { path: [urn], attribute: undefined };
    }
    if (lower.startsWith(`${urn.toLowerCase()}:`)) {
      schemaUrn = urn;
      rest = attrPath.slice(urn.length + 1);
      break;
    }
  }
  const names = rest.split('.');
  if (names.some((n) => n === '')) return undefined;
  const extension = schemaUrn && schemaUrn !== definition.id ? schemaUrn : undefined;
  const canonical: string[] = extension ? [extension] : [];
  let attribute: Attribute | undefined;
  try {
    for (let i = 1; i <= names.length; i++) {
      const partial = names.slice(0, i).join('.');
      const found = definition.attribute(extension ? `${extension}:${partial}` : partial);
      if (!(found instanceof SCIMMY.Types.Attribute)) return undefined;
      attribute = found;
      canonical.push(found.name);
    }
  } catch {
    return undefined;
  }
  return { path: canonical, attribute };
}

/** True for the strings a boolean attribute accepts besides JSON booleans (Entra sends `"True"`). */
const BOOLEAN_TEXT = /^(?:true|false)$/i;

/**
 * `value` with the strings `"True"`/`"False"` (any case) turned into booleans wherever the
 * schema says the attribute at that place is a boolean; nothing else changes. `path` is the
 * attribute path of `value` (undefined at the resource's root); keys are paths relative to it
 * (dotted, or extension URNs). Source: docs/contract.md Part B (`active` as a boolean or the strings
 * `"True"`/`"False"`), Entra ID's provisioning requests.
 */
export function normalizeBooleans(definition: SchemaDefinition, value: unknown, path?: string): unknown {
  if (Array.isArray(value)) return value.map((item) => normalizeBooleans(definition, item, path));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, normalizeBooleans(definition, item, childPath(definition, path, key))]),
    );
  }
  if (typeof value === 'string' && path !== undefined && BOOLEAN_TEXT.test(value)) {
    if (resolveAttribute(definition, path)?.attribute?.type === 'boolean') return value.toLowerCase() === 'true';
  }
  return value;
}

/** The path of `key` inside the value at `path`. */
function childPath(definition: SchemaDefinition, path: string | undefined, key: string): string {
  if (path === undefined || key.toLowerCase().startsWith('urn:')) return key;
  const parent = resolveAttribute(definition, path);
  return parent && parent.attribute === undefined ? `${path}:${key}` : `${path}.${key}`;
}

/**
 * The keys of a path-less PATCH value (or a resource) that name no attribute of the schema
 * removed, so that unknown attributes are ignored as docs/contract.md Part B asks, instead of failing
 * the whole request.
 */
export function withoutUnknownAttributes(definition: SchemaDefinition, value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(value).filter(([key]) => key.toLowerCase() === 'schemas' || resolveAttribute(definition, key) !== undefined),
  );
}

/** scimType (RFC 7644 §3.12) → the error code wum renders it from. */
const CODES_BY_SCIM_TYPE: Record<string, ErrorCode> = {
  invalidFilter: 'invalid_filter',
  invalidPath: 'invalid_path',
  noTarget: 'no_target',
  mutability: 'mutability',
  invalidSyntax: 'invalid_syntax',
  invalidValue: 'invalid_value',
};

/**
 * Runs `work` (a call into SCIMMY on request input) and turns what SCIMMY throws about that
 * input — its SCIMError with a scimType, or a TypeError about a value — into the matching
 * `400` AppError, so bad input never becomes a 5xx.
 *
 * @throws AppError `invalid_value`, `invalid_path`, `invalid_syntax`, `invalid_filter`,
 *   `mutability` or `no_target` (400).
 */
export async function fromLibraryErrors<T>(work: () => T | Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof AppError) throw error;
    if (error instanceof SCIMMY.Types.Error) {
      const scimType = (error as { scimType?: string }).scimType;
      throw new AppError(CODES_BY_SCIM_TYPE[scimType ?? ''] ?? 'invalid_value', error.message);
    }
    if (error instanceof TypeError || error instanceof SyntaxError || error instanceof RangeError) {
      throw new AppError('invalid_value', error.message);
    }
    throw error;
  }
}
