import { AppError } from '../errors.ts';

/**
 * Why the domain refused a verified sign-in (docs/security.md, "Sign-in refusals"): the code the
 * log records, where the refusal page's message (which may name the email) is never logged.
 */
export type AdmissionRefusal = 'email_missing' | 'email_unverified' | 'email_not_ascii' | 'not_owner' | 'not_operator' | 'another_account';

/**
 * A refused sign-in (`sign_in_refused`, 403): `detail` is for the person at the browser, `reason`
 * for the log and the operator reading it.
 */
export class SignInRefusedError extends AppError {
  constructor(
    readonly reason: AdmissionRefusal,
    detail: string,
  ) {
    super('sign_in_refused', detail);
  }
}
