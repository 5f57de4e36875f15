import SCIMMY from 'scimmy';

/*
 * SCIM schemas (RFC 7643 §7) as JSON Schema 2020-12, for the SCIM OpenAPI document: generated
 * from SCIMMY's definitions, the same ones the service validates input with and serves at
 * `/Schemas`, so the document cannot describe other attributes than the service has.
 */

/** A JSON Schema (2020-12) object. */
export type JsonSchema = Record<string, unknown>;

/** An attribute definition as RFC 7643 §7 writes it (SCIMMY's `Attribute#toJSON`). */
interface AttributeDefinition {
  readonly name: string;
  readonly type: string;
  readonly multiValued: boolean;
  readonly description?: string;
  readonly required: boolean;
  readonly subAttributes?: readonly AttributeDefinition[];
  readonly canonicalValues?: readonly string[];
  readonly mutability?: string;
  readonly returned?: string;
}

/** The JSON Schema of a singular value of each SCIM data type (RFC 7643 §2.3), other than complex. */
const TYPES: Record<string, JsonSchema> = {
  string: { type: 'string' },
  boolean: { type: 'boolean' },
  decimal: { type: 'number' },
  integer: { type: 'integer' },
  dateTime: { type: 'string', format: 'date-time' },
  // A URI: a URN (`schemas`), an absolute URL (`$ref`) or relative to the base (`endpoint`).
  reference: { type: 'string', format: 'uri-reference' },
  binary: { type: 'string', contentEncoding: 'base64' },
};

/**
 * What a schema describes, which decides the attributes it requires:
 * - `response`: resources as the service answers them, whole: every required attribute;
 * - `projected`: answers that `attributes`/`excludedAttributes` may have narrowed (RFC 7644
 *   §3.4.2.5): only the attributes returned always, and `schemas` (RFC 7643 §3);
 * - `request`: resources as clients send them: the required attributes but the read-only ones
 *   (`id`, `meta`), which the service assigns and ignores in requests (RFC 7643 §3.1).
 */
type Reading = 'response' | 'projected' | 'request';

/** True when `attribute` must be present in a resource of `reading`. */
function isRequired(attribute: AttributeDefinition, reading: Reading): boolean {
  if (reading === 'projected') return attribute.returned === 'always' || attribute.name === 'schemas';
  return attribute.required && (reading === 'response' || attribute.mutability !== 'readOnly');
}

/** An object of `attributes`, each a property; the required ones listed. */
function objectOf(attributes: readonly AttributeDefinition[], reading: Reading, description?: string): JsonSchema {
  const required = attributes.filter((a) => isRequired(a, reading)).map((a) => a.name);
  return {
    type: 'object',
    ...(description ? { description } : {}),
    properties: Object.fromEntries(attributes.map((a) => [a.name, attributeSchema(a, reading)])),
    ...(required.length > 0 ? { required } : {}),
  };
}

/**
 * The JSON Schema of one attribute: its type (a complex one an object of its sub-attributes),
 * an array when multi-valued, its canonical values as `enum` (wum accepts no others where its
 * schemas list them), `readOnly` for read-only attributes and `writeOnly` for those never
 * returned (the password). Source: RFC 7643 §2.3, §2.4, §7.
 */
function attributeSchema(attribute: AttributeDefinition, reading: Reading): JsonSchema {
  const value =
    attribute.type === 'complex'
      ? objectOf(attribute.subAttributes ?? [], reading)
      : { ...TYPES[attribute.type], ...(attribute.canonicalValues?.length ? { enum: [...attribute.canonicalValues] } : {}) };
  return {
    ...(attribute.multiValued ? { type: 'array', items: value } : value),
    ...(attribute.description ? { description: attribute.description } : {}),
    ...(attribute.mutability === 'readOnly' ? { readOnly: true } : {}),
    ...(attribute.returned === 'never' ? { writeOnly: true } : {}),
  };
}

/**
 * The JSON Schema of a resource of `definition`: its attributes, the common ones (`schemas`,
 * `id`, `externalId`, `meta`, RFC 7643 §3.1) included, and each extension as an object property
 * named by its URN (RFC 7643 §3.3). Unknown properties are allowed: the service ignores them in
 * requests (RFC 7644 §3.3). Source: RFC 7643 §2, §3, §7.
 */
export function resourceJsonSchema(definition: SCIMMY.Types.SchemaDefinition, reading: Reading = 'response'): JsonSchema {
  const attributes: AttributeDefinition[] = [];
  const extensions: Array<[string, JsonSchema]> = [];
  for (const item of definition.attributes as unknown[]) {
    if (item instanceof SCIMMY.Types.SchemaDefinition) {
      extensions.push([item.id, objectOf(definitionOf(item), reading, item.description)]);
    } else {
      attributes.push(JSON.parse(JSON.stringify(item)) as AttributeDefinition);
    }
  }
  const schema = objectOf(attributes, reading, definition.description);
  return { ...schema, properties: { ...(schema.properties as JsonSchema), ...Object.fromEntries(extensions) } };
}

/** The attribute definitions of an extension schema. */
function definitionOf(extension: SCIMMY.Types.SchemaDefinition): AttributeDefinition[] {
  // describe() holds Attribute objects: their JSON is the RFC 7643 §7 form.
  return (JSON.parse(JSON.stringify(extension.describe())) as { attributes: AttributeDefinition[] }).attributes;
}
