import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { useForm, type UseFormRegisterReturn } from 'react-hook-form';
import { Link } from 'wouter-preact';
import { policiesApi, type ExpiryPolicy, type InactivityPolicy } from '../api/policies.ts';
import { useScopes } from '../api/session.ts';
import { settingsHref, whereKey, type Where } from '../api/where.ts';
import { ConfirmDialog } from '../components/confirm-dialog.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { showFieldErrors } from '../components/field-errors.ts';
import { Page } from '../components/page.tsx';
import { FieldError, invalid } from '../components/user-fields.tsx';

const POLICIES_KEY = 'policies';

/** The inactivity form's values: durations as typed (ISO 8601), '' for no warning. */
interface InactivityValues {
  deactivate_after: string;
  applies_to: InactivityPolicy['applies_to'];
  warn_before: string;
}

/** A duration the API takes for "none": '' as null. */
const orNull = (text: string): string | null => (text.trim() ? text.trim() : null);

/** A text field for an ISO 8601 duration, with the API's error beside it. */
function DurationField({ id, label, placeholder, error, field }: { id: string; label: string; placeholder: string; error?: string | undefined; field: UseFormRegisterReturn }) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input id={id} placeholder={placeholder} autoComplete="off" spellcheck={false} {...invalid(`${id}-error`, error)} {...field} />
      <FieldError id={`${id}-error`} message={error} />
    </div>
  );
}

/** Why the controls are off when the session lacks `policies:write`. */
function ReadOnlyReason() {
  return (
    <p class="notice" role="status" id="policies-read-only">
      You can see the policies but not change them: this session lacks the <code>policies:write</code> scope (an owner’s
      session has it; a key needs it granted).
    </p>
  );
}

/** Shows and edits the inactivity policy; removes it after a confirmation. */
function InactivitySection({ where, policy, canWrite }: { where: Where; policy: InactivityPolicy | null; canWrite: boolean }) {
  const queryClient = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const values = (p: InactivityPolicy | null): InactivityValues => ({
    deactivate_after: p?.deactivate_after ?? '',
    applies_to: p?.applies_to ?? 'non_owners',
    warn_before: p?.warn_before ?? '',
  });
  const { register, handleSubmit, setError, reset, formState } = useForm<InactivityValues>({ defaultValues: values(policy) });
  useEffect(() => reset(values(policy)), [JSON.stringify(policy)]);
  const refresh = () => void queryClient.invalidateQueries({ queryKey: [POLICIES_KEY] });
  const save = useMutation({
    mutationFn: (v: InactivityValues) =>
      policiesApi.putInactivity(where, { deactivate_after: v.deactivate_after.trim(), applies_to: v.applies_to, warn_before: orNull(v.warn_before) }),
    onSuccess: refresh,
    onError: (error) => showFieldErrors(error, ['deactivate_after', 'applies_to', 'warn_before'], setError),
  });
  const remove = useMutation({ mutationFn: () => policiesApi.removeInactivity(where), onSuccess: refresh });
  const { errors } = formState;
  return (
    <section aria-labelledby="inactivity-title" class="card">
      <h2 id="inactivity-title">Inactivity</h2>
      <p role="status">
        {policy
          ? `Users not seen for ${policy.deactivate_after} are deactivated (${policy.applies_to === 'all' ? 'everyone, never the last owner' : 'everyone but owners'}); warning ${policy.warn_before ?? 'none'}.`
          : 'No inactivity policy: nobody is deactivated for inactivity.'}
      </p>
      <form class="form" noValidate onSubmit={handleSubmit((v) => save.mutate(v))}>
        {save.isError && <ErrorNotice error={save.error} title="Could not save the inactivity policy" />}
        {remove.isError && <ErrorNotice error={remove.error} title="Could not remove the inactivity policy" />}
        <fieldset disabled={!canWrite} aria-describedby={canWrite ? undefined : 'policies-read-only'} class="plain">
          <div class="field-row">
            <DurationField id="inactivity-after" label="Deactivate after" placeholder="P90D" error={errors.deactivate_after?.message} field={register('deactivate_after', { required: 'Enter a duration, e.g. P90D.' })} />
            <DurationField id="inactivity-warn" label="Warn before" placeholder="P7D" error={errors.warn_before?.message} field={register('warn_before')} />
          </div>
          <p class="field-hint">ISO 8601 durations: P90D is 90 days, P2W two weeks, PT12H twelve hours. An empty warning sends none.</p>
          <fieldset class="field" {...invalid('inactivity-applies-error', errors.applies_to?.message)}>
            <legend>Applies to</legend>
            <label class="choice">
              <input type="radio" value="non_owners" {...register('applies_to')} /> Everyone but owners
            </label>
            <label class="choice">
              <input type="radio" value="all" {...register('applies_to')} /> Everyone (never the last active owner)
            </label>
            <FieldError id="inactivity-applies-error" message={errors.applies_to?.message} />
          </fieldset>
          <div class="actions">
            <button type="submit" class="button button-primary" disabled={save.isPending}>
              {save.isPending ? 'Saving…' : policy ? 'Save inactivity policy' : 'Set inactivity policy'}
            </button>
            {policy && (
              <button type="button" class="button button-danger" onClick={() => setConfirming(true)}>
                Remove inactivity policy
              </button>
            )}
          </div>
        </fieldset>
      </form>
      <ConfirmDialog
        open={confirming}
        title="Remove the inactivity policy?"
        confirmLabel="Remove"
        danger
        onCancel={() => setConfirming(false)}
        onConfirm={() => {
          setConfirming(false);
          remove.mutate();
        }}
      >
        <p>Nobody is deactivated for inactivity any more, and no warnings for it are sent.</p>
      </ConfirmDialog>
    </section>
  );
}

/** Shows and edits the warning sent before each user's access ends (`warn_before`). */
function ExpirySection({ where, policy, canWrite }: { where: Where; policy: ExpiryPolicy; canWrite: boolean }) {
  const queryClient = useQueryClient();
  const { register, handleSubmit, setError, reset, formState } = useForm<{ warn_before: string }>({
    defaultValues: { warn_before: policy.warn_before ?? '' },
  });
  useEffect(() => reset({ warn_before: policy.warn_before ?? '' }), [policy.warn_before]);
  const save = useMutation({
    mutationFn: (v: { warn_before: string }) => policiesApi.putExpiry(where, { warn_before: orNull(v.warn_before) }),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: [POLICIES_KEY] }),
    onError: (error) => showFieldErrors(error, ['warn_before'], setError),
  });
  const message = formState.errors.warn_before?.message;
  return (
    <section aria-labelledby="expiry-title" class="card">
      <h2 id="expiry-title">Warning before access ends</h2>
      <p role="status">
        {policy.warn_before
          ? `A user.access_expiring event is sent ${policy.warn_before} before each user’s access ends.`
          : 'No warning is sent before a user’s access ends.'}
      </p>
      <form class="form" noValidate onSubmit={handleSubmit((v) => save.mutate(v))}>
        {save.isError && <ErrorNotice error={save.error} title="Could not save the warning" />}
        <fieldset disabled={!canWrite} aria-describedby={canWrite ? undefined : 'policies-read-only'} class="plain">
          <DurationField id="expiry-warn" label="Warn before (empty: no warning)" placeholder="P7D" error={message} field={register('warn_before')} />
          <div class="actions">
            <button type="submit" class="button button-primary" disabled={save.isPending}>
              {save.isPending ? 'Saving…' : 'Save warning'}
            </button>
          </div>
        </fieldset>
      </form>
    </section>
  );
}

/**
 * The workspace's access policies, for its owner (a workspace session) or the operator (from
 * the operator's page of the workspace): the inactivity policy (set, change, remove) and the
 * warning before expiries. Anyone who can read users sees them; the controls are off, with the
 * reason, when the session lacks `policies:write` (the operator has every power). Source:
 * docs/console.md, "Access that ends on time"; docs/contract.md Part B, "Access that ends on time".
 */
export function PoliciesPage({ where }: { where: Where }) {
  const scopes = useScopes(where.as === 'operator');
  const key = [POLICIES_KEY, whereKey(where)];
  const inactivity = useQuery({ queryKey: [...key, 'inactivity'], queryFn: ({ signal }) => policiesApi.inactivity(where, signal) });
  const expiry = useQuery({ queryKey: [...key, 'expiry'], queryFn: ({ signal }) => policiesApi.expiry(where, signal) });
  const canWrite = scopes.allows('policies:write');
  return (
    <Page title={where.as === 'operator' ? `Access policies of ${where.subdomain}` : 'Access policies'}>
      {where.as === 'operator' && (
        <p>
          <Link href={settingsHref(where)}>← Workspace {where.subdomain}</Link>
        </p>
      )}
      {scopes.known && !canWrite && <ReadOnlyReason />}
      {(inactivity.isPending || expiry.isPending) && <p role="status">Loading the policies…</p>}
      {inactivity.isError && <ErrorNotice error={inactivity.error} title="Could not load the inactivity policy" onRetry={() => void inactivity.refetch()} />}
      {inactivity.isSuccess && <InactivitySection where={where} policy={inactivity.data} canWrite={canWrite} />}
      {expiry.isError && <ErrorNotice error={expiry.error} title="Could not load the warning" onRetry={() => void expiry.refetch()} />}
      {expiry.isSuccess && <ExpirySection where={where} policy={expiry.data} canWrite={canWrite} />}
    </Page>
  );
}
