import { SerializerSelector, type SerializerFactory } from '@fastify/fast-json-stringify-compiler';
import { EVENT_SERIALIZATION_SCHEMA } from './schemas/events.ts';

/**
 * Fastify's own response serializer factory (fast-json-stringify, as Fastify builds it by
 * default), with each route's serializer compiled on the first response that needs it rather
 * than at start: compiling every response schema of every route took about a tenth of a
 * second of a start (docs/performance.md, "The embedded store"). The serializers themselves,
 * and so the JSON a client receives, are the same. The shared `Event` schema is compiled as
 * EVENT_SERIALIZATION_SCHEMA (its `data` picked by `type` rather than tested against each shape
 * of the union); the OpenAPI document keeps the union. Passed as
 * `schemaController.compilersFactory.buildSerializer` (Fastify's `Fastify()` options).
 */
export const lazySerializerFactory: SerializerFactory = (externalSchemas, options) => {
  const shared = externalSchemas as Record<string, unknown> | undefined;
  const compile = SerializerSelector()(shared?.Event ? { ...shared, Event: EVENT_SERIALIZATION_SCHEMA } : shared, options);
  return (route) => {
    let serialize: ((doc: unknown) => string) | undefined;
    return (doc) => (serialize ??= compile(route))(doc);
  };
};
