import { useMutation } from '@tanstack/react-query';
import { useId } from 'react';
import { useForm, type UseFormRegister } from 'react-hook-form';
import type { AuditStreamWithSecret, NewAuditStream, StreamDestination } from '../api/audit-streams.ts';
import { ErrorNotice } from '../components/error-notice.tsx';
import { FieldError, invalid } from '../components/user-fields.tsx';
import { WumApiError } from '../../../sdk/errors.ts';

/** The form's fields: every destination type's, of which only the chosen type's are sent. */
interface StreamFormValues {
  /** The operator's only: a subdomain, or empty for every workspace. */
  workspace: string;
  name: string;
  format: NewAuditStream['format'];
  /** Comma- or space-separated actions; empty: every action. */
  actions: string;
  type: StreamDestination['type'];
  url: string;
  token: string;
  endpoint: string;
  region: string;
  bucket: string;
  prefix: string;
  access_key_id: string;
  secret_access_key: string;
  host: string;
  port: string;
  ca_certificate: string;
}

/** A text field of the form: label, input, and the API's error for `destination.<name>` (or `name`). */
interface FieldProps {
  readonly id: string;
  readonly name: Exclude<keyof StreamFormValues, 'format' | 'type' | 'ca_certificate'>;
  readonly label: string;
  readonly register: UseFormRegister<StreamFormValues>;
  readonly errors: Partial<Record<keyof StreamFormValues, { message?: string }>>;
  readonly type?: string;
  readonly placeholder?: string;
  readonly optional?: boolean;
}

function Field({ id, name, label, register, errors, type = 'text', placeholder, optional = false }: FieldProps) {
  const inputId = `${id}-${name}`;
  const message = errors[name]?.message;
  return (
    <div class="field">
      <label for={inputId}>
        {label}
        {optional && ' (optional)'}
      </label>
      <input
        id={inputId}
        type={type}
        autoComplete="off"
        spellcheck={false}
        placeholder={placeholder}
        {...invalid(`${inputId}-error`, message)}
        {...register(name, optional ? {} : { required: `Enter the ${label.toLowerCase()}.` })}
      />
      <FieldError id={`${inputId}-error`} message={message} />
    </div>
  );
}

/** The destination the form describes, with only the chosen type's fields (optional ones when filled). */
function destinationOf(v: StreamFormValues): StreamDestination {
  const optional = (key: 'endpoint' | 'prefix' | 'ca_certificate') => (v[key].trim() ? { [key]: v[key].trim() } : {});
  switch (v.type) {
    case 'https':
      return { type: 'https', url: v.url.trim() };
    case 'splunk_hec':
      return { type: 'splunk_hec', url: v.url.trim(), token: v.token };
    case 's3':
      return {
        type: 's3',
        region: v.region.trim(),
        bucket: v.bucket.trim(),
        access_key_id: v.access_key_id.trim(),
        secret_access_key: v.secret_access_key,
        ...optional('endpoint'),
        ...optional('prefix'),
      };
    case 'syslog':
      return { type: 'syslog', host: v.host.trim(), port: Number(v.port), ...optional('ca_certificate') };
  }
}

const DEFAULTS: StreamFormValues = {
  workspace: '',
  name: '',
  format: 'json',
  actions: '',
  type: 'https',
  url: '',
  token: '',
  endpoint: '',
  region: '',
  bucket: '',
  prefix: '',
  access_key_id: '',
  secret_access_key: '',
  host: '',
  port: '6514',
  ca_certificate: '',
};

const TYPE_LABELS: Record<StreamDestination['type'], string> = {
  https: 'HTTPS (signed JSON Lines)',
  splunk_hec: 'Splunk HTTP Event Collector',
  s3: 'Amazon S3 or S3-compatible',
  syslog: 'Syslog over TLS',
};

/** Props of {@link AuditStreamForm}. */
export interface AuditStreamFormProps {
  /** Sends the create; its failure shows in the form, field errors beside their fields. */
  readonly create: (body: NewAuditStream) => Promise<AuditStreamWithSecret>;
  readonly onCreated: (stream: AuditStreamWithSecret) => void;
  readonly onCancel: () => void;
  /** True for the operator: the form asks which workspace's rows the stream sends (empty: every workspace's). */
  readonly operator?: boolean;
}

/**
 * Creates an audit stream: for the operator, the workspace whose rows it sends (empty: every
 * workspace's); a name, the format (wum's JSON or OCSF), the actions it sends
 * (empty: every one), and the destination: its type, then that type's fields (credentials are
 * write-only: never shown again). The API checks the address (the outbound guard) and its
 * field errors (`destination.url`, `destination.host`, …) show beside the fields. Source:
 * docs/api.md, "Audit streams"; docs/console.md, "Audit streams".
 */
export function AuditStreamForm({ create, onCreated, onCancel, operator = false }: AuditStreamFormProps) {
  const id = useId();
  const { register, handleSubmit, watch, setError, formState } = useForm<StreamFormValues>({
    defaultValues: DEFAULTS,
    // Only the chosen type's fields are held: another type's leave no value (or error) behind.
    shouldUnregister: true,
  });
  const type = watch('type');
  const mutation = useMutation({
    mutationFn: (v: StreamFormValues) => {
      const actions = v.actions.split(/[\s,]+/).filter(Boolean);
      return create({
        name: v.name.trim(),
        format: v.format,
        destination: destinationOf(v),
        ...(actions.length > 0 ? { actions } : {}),
        ...(operator ? { workspace: v.workspace.trim() || null } : {}),
      });
    },
    onSuccess: onCreated,
    onError: (error) => {
      if (!(error instanceof WumApiError)) return;
      for (const { field, message } of error.errors) {
        const name = field.replace(/^destination\./, '') as keyof StreamFormValues;
        if (name in DEFAULTS) setError(name, { type: 'server', message });
      }
    },
  });
  const { errors } = formState;
  const field = { id, register, errors };
  return (
    <form class="card form" noValidate aria-labelledby={`${id}-title`} onSubmit={handleSubmit((values) => mutation.mutate(values))}>
      <h3 id={`${id}-title`}>Add an audit stream</h3>
      {mutation.isError && <ErrorNotice error={mutation.error} title="Could not add the stream" />}
      <div class="field-row">
        {operator && <Field {...field} name="workspace" label="Workspace (empty: every workspace)" placeholder="acme" optional />}
        <Field {...field} name="name" label="Name" placeholder="SIEM" />
        <div class="field">
          <label for={`${id}-format`}>Format</label>
          <select id={`${id}-format`} {...register('format')}>
            <option value="json">wum JSON (each row as the audit trail shows it)</option>
            <option value="ocsf">OCSF 1.x events</option>
          </select>
        </div>
        <Field {...field} name="actions" label="Actions" placeholder="user.created, user.deactivated" optional />
      </div>
      <div class="field">
        <label for={`${id}-type`}>Destination</label>
        <select id={`${id}-type`} {...register('type')}>
          {Object.entries(TYPE_LABELS).map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </div>
      {(type === 'https' || type === 'splunk_hec') && (
        <div class="field-row">
          <Field
            {...field}
            name="url"
            type="url"
            label={type === 'https' ? 'Destination URL' : 'Collector URL'}
            placeholder={type === 'https' ? 'https://siem.example.com/wum' : 'https://splunk.example.com:8088'}
          />
          {type === 'splunk_hec' && <Field {...field} name="token" type="password" label="HEC token" />}
        </div>
      )}
      {type === 's3' && (
        <>
          <div class="field-row">
            <Field {...field} name="bucket" label="Bucket" />
            <Field {...field} name="region" label="Region" placeholder="eu-west-1" />
            <Field {...field} name="prefix" label="Key prefix" placeholder="wum/audit/" optional />
          </div>
          <div class="field-row">
            <Field {...field} name="access_key_id" label="Access key id" />
            <Field {...field} name="secret_access_key" type="password" label="Secret access key" />
            <Field {...field} name="endpoint" type="url" label="Endpoint of an S3-compatible server" placeholder="https://s3.example.com" optional />
          </div>
        </>
      )}
      {type === 'syslog' && (
        <>
          <div class="field-row">
            <Field {...field} name="host" label="Host" placeholder="syslog.example.com" />
            <Field {...field} name="port" type="number" label="TLS port" />
          </div>
          <div class="field">
            <label for={`${id}-ca`}>CA certificate, PEM (optional: else the system's)</label>
            <textarea id={`${id}-ca`} rows={4} spellcheck={false} {...register('ca_certificate')} />
          </div>
        </>
      )}
      <p class="hint">Credentials are kept encrypted and never shown again. An HTTPS stream’s signing secret is shown once, after adding it.</p>
      <div class="actions">
        <button type="button" class="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" class="button button-primary" disabled={mutation.isPending}>
          {mutation.isPending ? 'Adding…' : 'Add stream'}
        </button>
      </div>
    </form>
  );
}
