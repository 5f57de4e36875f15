import { Type } from '@sinclair/typebox';
import type { ExpiryPolicy, InactivityPolicy } from '../../core/lifecycle/policy.ts';
import type { ActivityResult } from '../../core/users/user-repository.ts';
import { StringEnum, Timestamp } from './common.ts';

/*
 * Wire shapes of the access policies and activity reports (docs/contract.md Part B, "Access
 * that ends on time").
 */

const Duration = (description: string) =>
  Type.String({ minLength: 2, maxLength: 64, description: `${description} ISO 8601, in weeks, days, hours, minutes or seconds.`, examples: ['P90D'] });
const NullableDuration = (description: string) =>
  Type.Unsafe<string | null>({ type: ['string', 'null'], minLength: 2, maxLength: 64, description: `${description} ISO 8601; null: none.`, examples: ['P7D'] });

/** Body and answer of `PUT`/`GET /policies/inactivity`. */
export const InactivityPolicySchema = Type.Object(
  {
    deactivate_after: Duration('An active user not seen for this long (no activity reported, else since its creation) is deactivated.'),
    applies_to: StringEnum(['non_owners', 'all'], { description: 'Whom it deactivates: everyone but owners, or everyone (never the last active owner).' }),
    warn_before: Type.Optional(NullableDuration('When `user.access_expiring` is sent, before the deactivation (shorter than `deactivate_after`).')),
  },
  { additionalProperties: false, $id: 'InactivityPolicy', examples: [{ deactivate_after: 'P90D', applies_to: 'non_owners', warn_before: 'P7D' }] },
);

/** Body and answer of `PUT`/`GET /policies/expiry`. */
export const ExpiryPolicySchema = Type.Object(
  { warn_before: NullableDuration('When `user.access_expiring` is sent, before a user\'s `expires_at`.') },
  { additionalProperties: false, $id: 'ExpiryPolicy', examples: [{ warn_before: 'P7D' }] },
);

/** The inactivity policy as the API shows it: durations as written. */
export function toWireInactivityPolicy(policy: InactivityPolicy) {
  return { deactivate_after: policy.deactivateAfter.text, applies_to: policy.appliesTo, warn_before: policy.warnBefore?.text ?? null };
}

/** The expiry policy as the API shows it. */
export function toWireExpiryPolicy(policy: ExpiryPolicy) {
  return { warn_before: policy.warnBefore?.text ?? null };
}

/** Most reports one `POST /users/activity` takes. */
export const MAX_ACTIVITY_REPORTS = 1000;

/** Body of `POST /users/activity`. */
export const ActivityBody = Type.Object(
  {
    activity: Type.Array(
      Type.Object(
        {
          email: Type.String({ minLength: 1, maxLength: 254, description: 'The user\'s email (any letter case).' }),
          at: { ...Timestamp, description: 'When the person was active (RFC 3339).' },
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: MAX_ACTIVITY_REPORTS, description: `At most ${MAX_ACTIVITY_REPORTS} reports.` },
    ),
  },
  { additionalProperties: false, examples: [{ activity: [{ email: 'ada@example.com', at: '2026-05-01T08:15:00Z' }] }] },
);

/** Answer of `POST /users/activity`. */
export const ActivityResultSchema = Type.Object({
  updated: Type.Integer({ description: 'Users whose `last_active_at` moved forward.' }),
  unchanged: Type.Integer({ description: 'Users named whose `last_active_at` was as recent already (it never moves back).' }),
  unknown: Type.Array(Type.String(), { description: 'Emails no user of the workspace has, as sent.' }),
});

/** The activity result as the API shows it. */
export function toWireActivityResult(result: ActivityResult) {
  return { updated: result.updated, unchanged: result.unchanged, unknown: result.unknown };
}
