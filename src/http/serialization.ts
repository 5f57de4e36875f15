import { SerializerSelector, type SerializerFactory } from '@fastify/fast-json-stringify-compiler';

/**
 * Fastify's own response serializer factory (fast-json-stringify, as Fastify builds it by
 * default), with each route's serializer compiled on the first response that needs it rather
 * than at start: compiling every response schema of every route took about a tenth of a
 * second of a start (docs/performance.md, "The embedded store"). The serializers themselves,
 * and so the JSON a client receives, are the same. Passed as
 * `schemaController.compilersFactory.buildSerializer` (Fastify's `Fastify()` options).
 */
export const lazySerializerFactory: SerializerFactory = (externalSchemas, options) => {
  const compile = SerializerSelector()(externalSchemas, options);
  return (route) => {
    let serialize: ((doc: unknown) => string) | undefined;
    return (doc) => (serialize ??= compile(route))(doc);
  };
};
