import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { useForm } from 'react-hook-form';
import { Link } from 'wouter-preact';
import { WumApiError } from '../../../sdk/errors.ts';
import { formatApps } from '../../../sdk/users-csv.ts';
import { usersApi, type AppRole, type User, type UserChanges, type VersionedUser } from '../api/users.ts';
import { useCatalogue, USERS_KEY } from '../api/queries.ts';
import { AuditEventRow } from '../components/audit-changes.tsx';
import { ConfirmDialog } from '../components/confirm-dialog.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { RequiresScope } from '../components/scope-notice.tsx';
import { useScopes } from '../api/session.ts';
import { showFieldErrors } from '../components/field-errors.ts';
import { Page } from '../components/page.tsx';
import { Pager } from '../components/pager.tsx';
import { toApps, UserFields, type UserFormValues } from '../components/user-fields.tsx';
import { dateTime, expiresAtOf, expiryDate, expiryLabel, roleLabel } from '../format.ts';
import { positiveParam, useUrlParams } from '../url-state.ts';
import { Table } from '../components/table.tsx';

/** The form's values for a user as read. */
function formValues(user: User): UserFormValues {
  return {
    email: user.email,
    first_name: user.first_name === '-' ? '' : user.first_name,
    last_name: user.last_name === '-' ? '' : user.last_name,
    role: user.role,
    apps: user.apps.map((app) => `${app.name}:${app.role}`),
    expires_at: expiryDate(user.expires_at),
  };
}

/**
 * The picked product roles with the `expires_at` each kept grant already had: `apps` replaces
 * the whole list, and the form does not edit grant expiries, so saving must not clear them.
 */
function keepGrantExpiries(picked: AppRole[], held: User['apps']): AppRole[] {
  return picked.map((app) => {
    const expiresAt = held.find((h) => h.name === app.name && h.role === app.role)?.expires_at;
    return expiresAt ? { ...app, expires_at: expiresAt } : app;
  });
}

/** True for the answer to a stale `If-Match`: someone else changed the user meanwhile. */
function isConflict(error: unknown): boolean {
  return error instanceof WumApiError && error.code === 'precondition_failed';
}

/** Someone else changed the user since the page read it: say so, and offer to load their version. */
function ConflictNotice({ onReload }: { onReload: () => void }) {
  return (
    <div class="notice notice-error" role="alert">
      <p class="notice-title">Someone else changed this user</p>
      <p>
        The user changed since you opened this page, so nothing was saved. Reload to see the current version (your edits here are
        discarded), then make your change again.
      </p>
      <button type="button" class="button button-primary" onClick={onReload}>
        Reload the user
      </button>
    </div>
  );
}

/** The user's audit history, newest first, paginated in the URL (`history`). */
function History({ email }: { email: string }) {
  const url = useUrlParams();
  const page = positiveParam(url.params, 'history', 1);
  const history = useQuery({
    queryKey: [USERS_KEY, 'history', email.toLowerCase(), page],
    queryFn: ({ signal }) => usersApi.history(email, { sort: '-occurred_at', page_number: page, page_size: 10 }, signal),
    placeholderData: keepPreviousData,
  });
  return (
    <section aria-labelledby="history-title">
      <h2 id="history-title">History</h2>
      {history.isError && <ErrorNotice error={history.error} title="Could not load the history" onRetry={() => void history.refetch()} />}
      {history.data && (
        <>
          <Table caption="Changes of this user, newest first" columns={['When', 'What', 'Who', 'Changes', 'Request id']}>
            {history.data.audit_events.map((event) => <AuditEventRow key={event.id} event={event} />)}
          </Table>
          <Pager pagination={history.data.pagination} noun="changes" url={url} pageParam="history" sizeParam="history_size" label="History pages" />
        </>
      )}
    </section>
  );
}

/** The edit form: names, workspace role, product roles and the last day of access, saved with `PATCH` and `If-Match`. */
function EditUser({ current, onSaved }: { current: VersionedUser; onSaved: (saved: VersionedUser) => void }) {
  const catalogue = useCatalogue();
  const queryClient = useQueryClient();
  const { register, handleSubmit, setError, reset, formState } = useForm<UserFormValues>({ defaultValues: formValues(current.user) });
  // A newer version read (a reload, or our own save): the form starts again from it.
  useEffect(() => reset(formValues(current.user)), [current.etag]);
  const save = useMutation({
    mutationFn: (values: UserFormValues) => {
      const changes: UserChanges = {
        first_name: values.first_name.trim() || null,
        last_name: values.last_name.trim() || null,
        role: values.role,
        apps: keepGrantExpiries(toApps(values.apps), current.user.apps),
        // Sent only when changed: an untouched date keeps the exact instant the API holds.
        ...(values.expires_at !== expiryDate(current.user.expires_at) ? { expires_at: expiresAtOf(values.expires_at) } : {}),
      };
      return usersApi.update(current.user.email, changes, current.etag);
    },
    onSuccess: onSaved,
    onError: (error) => showFieldErrors(error, ['first_name', 'last_name', 'role', 'apps', 'expires_at'], setError),
  });
  const reload = () => {
    save.reset();
    void queryClient.invalidateQueries({ queryKey: [USERS_KEY, 'one', current.user.email.toLowerCase()] });
  };
  return (
    <section aria-labelledby="edit-title">
      <h2 id="edit-title">Edit</h2>
      <form class="form" noValidate onSubmit={handleSubmit((values) => save.mutate(values))}>
        {save.isError && (isConflict(save.error) ? <ConflictNotice onReload={reload} /> : <ErrorNotice error={save.error} title="Could not save the user" />)}
        {save.isSuccess && !formState.isDirty && (
          <p class="notice notice-success" role="status">
            Saved.
          </p>
        )}
        <UserFields register={register} errors={formState.errors} catalogue={catalogue} idPrefix="edit" />
        <div class="actions">
          <button type="button" class="button" disabled={!formState.isDirty} onClick={() => reset(formValues(current.user))}>
            Discard changes
          </button>
          <button type="submit" class="button button-primary" disabled={save.isPending}>
            {save.isPending ? 'Saving…' : 'Save changes'}
          </button>
        </div>
      </form>
    </section>
  );
}

/** Deactivate or reactivate, after a confirmation, at the version read (`If-Match`). */
function StatusAction({ current, onSaved }: { current: VersionedUser; onSaved: (saved: VersionedUser) => void }) {
  const queryClient = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const { user, etag } = current;
  const active = user.status === 'active';
  const change = useMutation({
    mutationFn: async (): Promise<VersionedUser> => {
      if (!active) return usersApi.update(user.email, { status: 'active' }, etag);
      await usersApi.remove(user.email, etag);
      return usersApi.get(user.email);
    },
    onSuccess: onSaved,
  });
  return (
    <>
      <button type="button" class={active ? 'button button-danger' : 'button button-primary'} onClick={() => setConfirming(true)}>
        {active ? 'Deactivate' : 'Reactivate'}
      </button>
      {change.isError &&
        (isConflict(change.error) ? (
          <ConflictNotice
            onReload={() => {
              change.reset();
              void queryClient.invalidateQueries({ queryKey: [USERS_KEY, 'one', user.email.toLowerCase()] });
            }}
          />
        ) : (
          <ErrorNotice error={change.error} title={active ? 'Could not deactivate the user' : 'Could not reactivate the user'} />
        ))}
      <ConfirmDialog
        open={confirming}
        title={active ? `Deactivate ${user.email}?` : `Reactivate ${user.email}?`}
        confirmLabel={active ? 'Deactivate' : 'Reactivate'}
        danger={active}
        onCancel={() => setConfirming(false)}
        onConfirm={() => {
          setConfirming(false);
          change.mutate();
        }}
      >
        <p>
          {active
            ? 'They lose access at once and leave the default listing. Their data is kept, and you can reactivate them later.'
            : `They get their access back with their workspace role and product roles (${formatApps(user.apps) || 'none'}).`}
        </p>
      </ConfirmDialog>
    </>
  );
}

/**
 * One user: details, the edit form (`PATCH` with `If-Match`; a conflict says someone else
 * changed the user and offers a reload), deactivate/reactivate with a confirmation, and the
 * user's audit history. Source: docs/console.md, "Using it"; docs/contract.md Part B, Changing a user in place.
 */
export function UserPage({ email: encoded }: { email: string }) {
  let email = encoded;
  try {
    email = decodeURIComponent(encoded);
  } catch {
    // Not percent-encoded: the address holds the email as it is.
  }
  const queryClient = useQueryClient();
  const key = [USERS_KEY, 'one', email.toLowerCase()];
  const found = useQuery({ queryKey: key, queryFn: ({ signal }) => usersApi.get(email, signal) });
  const [notice, setNotice] = useState<string | undefined>((history.state as { notice?: string } | null)?.notice);
  const onSaved = (saved: VersionedUser) => {
    queryClient.setQueryData(key, saved);
    void queryClient.invalidateQueries({ queryKey: [USERS_KEY], predicate: (query) => query.queryKey[1] !== 'one' });
    setNotice(undefined);
  };
  const user = found.data?.user;
  const canWrite = useScopes().allows('users:write');
  return (
    <Page title={user ? user.email : email} actions={found.data && canWrite && <StatusAction current={found.data} onSaved={onSaved} />}>
      <p>
        <Link href="/users">← All users</Link>
      </p>
      {notice && (
        <p class="notice notice-success" role="status">
          {notice}
        </p>
      )}
      {found.isPending && <p role="status">Loading…</p>}
      {found.isError && <ErrorNotice error={found.error} title="Could not load the user" onRetry={() => void found.refetch()} />}
      {found.data && user && (
        <>
          <dl class="details">
            <dt>Status</dt>
            <dd>
              <span class={`status status-${user.status}`}>{user.status === 'active' ? 'Active' : 'Deactivated'}</span>
            </dd>
            <dt>Name</dt>
            <dd>
              {user.first_name} {user.last_name}
            </dd>
            <dt>Workspace role</dt>
            <dd>{roleLabel(user.role)}</dd>
            <dt>Product roles</dt>
            <dd>{formatApps(user.apps).replaceAll(';', ', ') || 'none'}</dd>
            <dt>Access ends</dt>
            <dd>{user.expires_at ? `${dateTime(user.expires_at)} (${expiryLabel(user.expires_at)})` : 'never'}</dd>
            <dt>Created</dt>
            <dd>{dateTime(user.created_at)}</dd>
            <dt>Last changed</dt>
            <dd>{dateTime(user.updated_at)}</dd>
            <dt>Id</dt>
            <dd>
              <code>{user.id}</code>
            </dd>
          </dl>
          <RequiresScope scope="users:write" what="Changing, deactivating and reactivating this user">
            <EditUser current={found.data} onSaved={onSaved} />
          </RequiresScope>
          <History email={user.email} />
        </>
      )}
    </Page>
  );
}
