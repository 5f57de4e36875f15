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
