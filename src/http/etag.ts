import { AppError } from '../core/errors.ts';
import type { Precondition } from '../core/users/users-service.ts';

/**
 * The strong entity tag of a user at `version`: `"<version>"`. It changes on every change of
 * the user. Source: RFC 9110 §8.8.3; docs/contract.md Part B, Changing a user in place.
 */
export function userEtag(version: number): string {
  return `"${version}"`;
}

/** One entity tag of an `If-Match` list: optional weakness prefix and a quoted opaque tag. */
const ENTITY_TAG = /^(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"$/;

/**
 * Reads `If-Match` into the versions it accepts: `*` (any existing user), or the versions of
 * its strong tags; weak tags and tags that are no version of ours match nothing, as RFC 9110
 * §13.1.1 requires strong comparison. Absent → undefined (no precondition).
 *
 * @throws AppError `invalid_parameter` (400) when the header is not `*` or a list of entity tags.
 */
export function parseIfMatch(header: string | string[] | undefined): Precondition | undefined {
  if (header === undefined) return undefined;
  const value = (Array.isArray(header) ? header.join(',') : header).trim();
  if (value === '*') return '*';
  const versions: number[] = [];
  for (const part of value.split(',')) {
    const match = ENTITY_TAG.exec(part.trim());
    if (!match) {
      throw new AppError('invalid_parameter', 'If-Match must be * or a list of entity tags such as "3".', [
        { field: 'If-Match', message: 'must be * or a list of quoted entity tags' },
      ]);
    }
    if (!match[1] && /^[1-9]\d{0,9}$/.test(match[2]!)) versions.push(Number(match[2]));
  }
  return versions;
}
