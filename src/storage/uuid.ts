/**
 * True when `value` is a UUID in its text form: an id that is not one cannot name a row, and
 * answering "not found" beats a database type error.
 */
export function isUuid(value: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
}
