import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useForm } from 'react-hook-form';
import { Link, useLocation } from 'wouter-preact';
import { WumApiError } from '../../../sdk/errors.ts';
import { wasReactivated } from '../../../sdk/users-csv.ts';
import { usersApi } from '../api/users.ts';
import { useCatalogue, USERS_KEY } from '../api/queries.ts';
import { ErrorNotice } from '../components/error-notice.tsx';
import { RequiresScope } from '../components/scope-notice.tsx';
import { showFieldErrors } from '../components/field-errors.ts';
import { Page } from '../components/page.tsx';
import { FieldError, invalid, toApps, UserFields, type UserFormValues } from '../components/user-fields.tsx';
import { expiresAtOf, userHref } from '../format.ts';

/** What the email typed so far belongs to: nobody, an active user, or a deactivated one. */
function EmailOwner({ email }: { email: string }) {
  const owner = useQuery({
    queryKey: [USERS_KEY, 'one', email.toLowerCase()],
    queryFn: ({ signal }) => usersApi.get(email, signal),
    enabled: email !== '',
    retry: false,
  });
  if (!owner.data) return null;
  const { user } = owner.data;
  return user.status === 'deactivated' ? (
    <p class="notice" role="status">
      This email belongs to a deactivated user ({user.first_name} {user.last_name}). Adding reactivates them with the role and
      product roles chosen here; their names are kept unless you type new ones.
    </p>
  ) : (
    <p class="notice" role="status">
      An active user already has this email. <Link href={userHref(user.email)}>Open {user.email}</Link> to change them.
    </p>
  );
}

/**
 * Adds a user (`POST /users`), or reactivates the deactivated user with that email (the form
 * says so before sending). Product roles are picked from the catalogue. The API's field errors
 * show beside their fields; its detail and request id above the form.
 */
export function NewUserPage() {
  const catalogue = useCatalogue();
  const queryClient = useQueryClient();
  const [, navigate] = useLocation();
  const [checkedEmail, setCheckedEmail] = useState('');
  const { register, handleSubmit, setError, formState } = useForm<UserFormValues>({
    defaultValues: { email: '', first_name: '', last_name: '', role: 'non_owner', apps: [], expires_at: '' },
  });
  const add = useMutation({
    mutationFn: (values: UserFormValues) =>
      usersApi.add({
        email: values.email.trim(),
        role: values.role,
        apps: toApps(values.apps),
        ...(values.expires_at ? { expires_at: expiresAtOf(values.expires_at) } : {}),
        ...(values.first_name.trim() ? { first_name: values.first_name.trim() } : {}),
        ...(values.last_name.trim() ? { last_name: values.last_name.trim() } : {}),
      }),
    onSuccess: (user) => {
      void queryClient.invalidateQueries({ queryKey: [USERS_KEY] });
      navigate(userHref(user.email), { state: { notice: wasReactivated(user) ? 'Reactivated.' : 'Added.' } });
    },
    onError: (error) => showFieldErrors(error, ['email', 'first_name', 'last_name', 'role', 'apps', 'expires_at'], setError),
  });
  const { errors } = formState;
  const emailField = register('email', { required: 'Enter the user’s email.' });
  return (
    <Page title="Add a user">
      <RequiresScope scope="users:write" what="Adding users">
        <form class="form" noValidate onSubmit={handleSubmit((values) => add.mutate(values))}>
          {add.isError && (
            <ErrorNotice
              error={add.error}
              title={add.error instanceof WumApiError && add.error.code === 'user_already_exists' ? 'This user is already active' : 'Could not add the user'}
            />
          )}
          <div class="field">
            <label for="new-email">Email</label>
            <input
              id="new-email"
              type="email"
              autoComplete="off"
              spellcheck={false}
              {...invalid('new-email-error', errors.email?.message)}
              {...emailField}
              onBlur={(event) => {
                void emailField.onBlur(event);
                const input = event.currentTarget;
                setCheckedEmail(input.value.trim() && input.checkValidity() ? input.value.trim() : '');
              }}
            />
            <FieldError id="new-email-error" message={errors.email?.message} />
          </div>
          <EmailOwner email={checkedEmail} />
          <UserFields register={register} errors={errors} catalogue={catalogue} idPrefix="new" />
          <div class="actions">
            <Link href="/users" class="button">
              Cancel
            </Link>
            <button type="submit" class="button button-primary" disabled={add.isPending}>
              {add.isPending ? 'Adding…' : 'Add user'}
            </button>
          </div>
        </form>
      </RequiresScope>
    </Page>
  );
}
