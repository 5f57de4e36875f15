/*
 * The one canonical form in which emails are compared (docs/contract.md Part B, Users;
 * docs/security.md, "One spelling of an email"): wum's emails are ASCII, and two emails are the
 * same person when they are equal after folding the ASCII letters A-Z to a-z, nothing else.
 * JavaScript's toLowerCase() and PostgreSQL's lower() fold far more (U+212A KELVIN SIGN to
 * "k", U+0130 to "i̇"), which let another mailbox's address match an owner's.
 */

/**
 * The syntax of an email wum accepts, as an ECMA-262 pattern (JSON Schema's `pattern`, no
 * flags): a dot-atom local part and a domain of DNS labels, ASCII only (the `email` format of
 * ajv-formats' full mode, letters spelled in both cases), with the white space around it that
 * the service trims before it checks (docs/api.md, Users).
 */
export const EMAIL_PATTERN =
  "^\\s*[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+(?:\\.[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?\\.)+[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?\\s*$";

/** Printable ASCII: what an email wum accepts consists of (the email format is ASCII-only). */
const ASCII = /^[\x20-\x7e]*$/;

/**
 * True when `email` holds only printable ASCII characters. An email that does not is never
 * stored (the `email` format refuses it) and never matches anybody.
 */
export function isAsciiEmail(email: string): boolean {
  return ASCII.test(email);
}

/**
 * `email` with the ASCII letters A-Z folded to a-z and every other character left as it is:
 * the form emails are compared in. Applied to an email with non-ASCII characters it keeps them,
 * so the result still differs from every stored (ASCII) email's fold.
 */
export function foldEmail(email: string): string {
  return email.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
}

/**
 * The canonical form of an email used to find a person (a sign-in, an operator's list): trimmed
 * and folded by {@link foldEmail}; undefined when it holds a non-ASCII character, which
 * identifies no one (docs/security.md, "One spelling of an email").
 */
export function canonicalEmail(email: string): string | undefined {
  const trimmed = email.trim();
  return isAsciiEmail(trimmed) ? foldEmail(trimmed) : undefined;
}
