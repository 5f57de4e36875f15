/* How values read in the tables. */

/** A workspace role for people: `owner` → Owner, `non_owner` → Non-owner. */
export function roleLabel(role: string): string {
  return role === 'owner' ? 'Owner' : role === 'non_owner' ? 'Non-owner' : role;
}

/** A timestamp (RFC 3339) as a date and time in the browser's time zone, e.g. "15 Jan 2025, 09:30". */
export function dateTime(value: string | null | undefined): string {
  if (!value) return '—';
  return new Date(value).toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'short' });
}

/** A user's address in the console: `/users/<email, percent-encoded>`. */
export function userHref(email: string): string {
  return `/users/${encodeURIComponent(email)}`;
}

const DAY_MS = 86_400_000;

/** The UTC calendar day of an instant, as a day number (days since 1970-01-01). */
function utcDay(instant: Date): number {
  return Math.floor(instant.getTime() / DAY_MS);
}

/**
 * When a user's access ends, for the users list: "expired", "expires today", "expires in 1 day",
 * "expires in N days"; '' for never. Days are UTC calendar days, as the user form's date is a
 * UTC day (docs/console.md, "Access that ends on time").
 */
export function expiryLabel(expiresAt: string | null | undefined, now: Date = new Date()): string {
  if (!expiresAt) return '';
  const end = new Date(expiresAt);
  if (end.getTime() <= now.getTime()) return 'expired';
  const days = utcDay(end) - utcDay(now);
  if (days === 0) return 'expires today';
  return days === 1 ? 'expires in 1 day' : `expires in ${days} days`;
}

/** The date input's value (`YYYY-MM-DD`, the UTC day) for an RFC 3339 instant; '' for none. */
export function expiryDate(expiresAt: string | null | undefined): string {
  return expiresAt ? new Date(expiresAt).toISOString().slice(0, 10) : '';
}

/**
 * The `expires_at` sent for a date picked in the user form: the end of that UTC day
 * (`YYYY-MM-DDT23:59:59Z`), so "until 30 June" keeps access through 30 June; null for an
 * empty date (never).
 */
export function expiresAtOf(date: string): string | null {
  return date ? `${date}T23:59:59Z` : null;
}

/**
 * The `expires_before` of the "expiring within N days" filter: the start of the UTC day after
 * the Nth day from today, so everyone whose access ends within those N calendar days matches,
 * and the value (the query's cache key) stays the same all day.
 */
export function expiringWithin(days: number, now: Date = new Date()): string {
  return new Date((utcDay(now) + days + 1) * DAY_MS).toISOString().replace('.000Z', 'Z');
}
