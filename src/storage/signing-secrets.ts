import { sql, type SQL } from 'drizzle-orm';

/*
 * Which stored secrets sign a webhook delivery (docs/api.md, "Events and webhooks": `rotate-secret`): the endpoint's
 * current secret, and its previous one until `previous_secret_expires_at`. Read by the claim and
 * by a write that hands its deliveries over, so both sign alike.
 */

/** The endpoint row `ep`'s previous secret while it still signs, else null (SQL). */
export const previousSecretWhileValid: SQL = sql`case when ep.previous_secret_expires_at > now() then ep.previous_secret end`;

/** The secrets, encrypted as stored, that sign a delivery: the current one, then the previous one if it still signs. */
export function signingSecrets(secret: string, previousSecret: string | null): string[] {
  return previousSecret ? [secret, previousSecret] : [secret];
}
