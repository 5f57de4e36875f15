/*
 * The logger the background parts of the server take (the webhook worker, the pruner): pino's
 * call shape, `log.warn({ err }, 'message')` or `log.info('message')`, so a pino or Fastify
 * logger fits as it is and nothing in them depends on the HTTP framework.
 */

/** One level's method: structured fields first, then the message; or the message alone. */
export interface LogMethod {
  (fields: object, message?: string): void;
  (message: string): void;
}

/** A logger with the levels the background parts use. */
export interface Logger {
  readonly info: LogMethod;
  readonly warn: LogMethod;
  readonly error: LogMethod;
}
