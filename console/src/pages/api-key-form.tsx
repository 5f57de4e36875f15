import { useMutation } from '@tanstack/react-query';
import { useId } from 'react';
import { useForm } from 'react-hook-form';
import { API_KEY_SCOPES, type NamedApiKeyScope } from '../../../sdk/api-key-scopes.ts';
import type { CreatedApiKey, NewApiKey } from '../api/admin.ts';
import { ErrorNotice } from '../components/error-notice.tsx';
import { showFieldErrors } from '../components/field-errors.ts';
import { FieldError, invalid } from '../components/user-fields.tsx';

/**
 * What each scope allows, for the checkboxes (docs/security.md, "API keys and scopes"): every
 * named scope must have one; the self-service scopes are described ahead of the generated list.
 */
const SCOPE_HINTS: Record<NamedApiKeyScope, string> & Record<string, string> = {
  'users:read': 'list, find and read users and their history',
  'users:write': 'add, change, deactivate and reactivate users',
  'products:read': 'list the products and their roles',
  'events:read': 'read the events feed',
  scim: 'provision through SCIM (an identity provider)',
  'owners:write': 'make owners: add, promote, reactivate or rename one (with users:write or scim)',
  'activity:write': 'report when people were last active (nothing else)',
  'policies:write': 'change the inactivity and expiry policies',
  'keys:write': "create, list and revoke the workspace's API keys (never with more scopes than its own)",
  'sso:write': "set, test and remove the workspace's identity provider",
  'webhooks:write': "manage the workspace's webhook endpoints and their deliveries",
  'audit:read': "read the workspace's audit trail",
  'audit:write': "stream the workspace's audit trail to a SIEM: create, change, pause, replay and delete audit streams",
};

/** Expiry choices, in days; 0 is never. */
const EXPIRIES = [
  { days: 30, label: 'in 30 days' },
  { days: 90, label: 'in 90 days' },
  { days: 365, label: 'in a year' },
  { days: 0, label: 'never' },
];

interface KeyFormValues {
  name: string;
  scopes: NamedApiKeyScope[];
  expires_in_days: string;
}

/** Props of {@link ApiKeyForm}. */
export interface ApiKeyFormProps {
  readonly create: (body: NewApiKey) => Promise<CreatedApiKey>;
  readonly onCreated: (key: CreatedApiKey) => void;
  readonly onCancel: () => void;
  /** Why the creator may not give `scope` (a key never gets a scope its creator lacks), else undefined. */
  readonly lacking?: (scope: string) => string | undefined;
}

/**
 * Creates a workspace API key: a name, the scopes it carries (least privilege: none is
 * checked until the person picks; a scope the creator lacks is off, with the reason) and when
 * it expires (90 days unless changed).
 */
export function ApiKeyForm({ create, onCreated, onCancel, lacking = () => undefined }: ApiKeyFormProps) {
  const id = useId();
  const { register, handleSubmit, setError, formState } = useForm<KeyFormValues>({
    defaultValues: { name: '', scopes: [], expires_in_days: '90' },
  });
  const mutation = useMutation({
    mutationFn: ({ name, scopes, expires_in_days }: KeyFormValues) => {
      const days = Number(expires_in_days);
      return create({
        name: name.trim(),
        scopes,
        ...(days > 0 ? { expires_at: new Date(Date.now() + days * 86_400_000).toISOString() } : {}),
      });
    },
    onSuccess: onCreated,
    onError: (error) => showFieldErrors(error, ['name', 'scopes'], setError),
  });
  const { errors } = formState;
  return (
    <form class="card form" noValidate aria-labelledby={`${id}-title`} onSubmit={handleSubmit((values) => mutation.mutate(values))}>
      <h3 id={`${id}-title`}>Create an API key</h3>
      {mutation.isError && <ErrorNotice error={mutation.error} title="Could not create a key" />}
      <div class="field-row">
        <div class="field">
          <label for={`${id}-name`}>Name</label>
          <input
            id={`${id}-name`}
            autoComplete="off"
            placeholder="okta-scim"
            {...invalid(`${id}-name-error`, errors.name?.message)}
            {...register('name', { validate: (v) => v.trim() !== '' || 'Name the key after what will use it, e.g. okta-scim.' })}
          />
          <FieldError id={`${id}-name-error`} message={errors.name?.message} />
        </div>
        <div class="field">
          <label for={`${id}-expiry`}>Expires</label>
          <select id={`${id}-expiry`} {...register('expires_in_days')}>
            {EXPIRIES.map((e) => (
              <option key={e.days} value={String(e.days)}>
                {e.label}
              </option>
            ))}
          </select>
        </div>
      </div>
      <fieldset class="field">
        <legend>Scopes</legend>
        <div class="products">
          {API_KEY_SCOPES.map((scope) => {
            const reason = lacking(scope);
            return (
              <label key={scope} class="choice">
                <input
                  type="checkbox"
                  value={scope}
                  disabled={reason !== undefined}
                  aria-describedby={reason ? `${id}-${scope}-reason` : undefined}
                  {...register('scopes', { validate: (v) => v.length > 0 || 'Pick at least one scope.' })}
                />{' '}
                <code>{scope}</code> — {SCOPE_HINTS[scope]}
                {reason && (
                  <span id={`${id}-${scope}-reason`} class="hint">
                    {' '}
                    (off: {reason})
                  </span>
                )}
              </label>
            );
          })}
        </div>
        <FieldError id={`${id}-scopes-error`} message={errors.scopes?.message} />
      </fieldset>
      <div class="actions">
        <button type="button" class="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" class="button button-primary" disabled={mutation.isPending}>
          {mutation.isPending ? 'Creating…' : 'Create the key'}
        </button>
      </div>
    </form>
  );
}
