import type { FieldValues, Path, UseFormSetError } from 'react-hook-form';
import { WumApiError } from '../../../sdk/errors.ts';

/**
 * Puts the API's field errors (`errors[]` of the problem, e.g. `user.email`,
 * `user.apps[0].role`) beside the form's fields: `user.<name>` goes to field `<name>`, and
 * anything under `user.apps` to `apps`. Fields the form does not have stay in the error notice.
 * Source: docs/contract.md Part B, Errors (`errors[]` with `field` and `message`).
 */
export function showFieldErrors<T extends FieldValues>(error: unknown, fields: readonly Path<T>[], setError: UseFormSetError<T>): void {
  if (!(error instanceof WumApiError)) return;
  for (const { field, message } of error.errors) {
    const name = field.replace(/^user\./, '').replace(/^apps\b.*/, 'apps') as Path<T>;
    if (fields.includes(name)) setError(name, { type: 'server', message });
  }
}
