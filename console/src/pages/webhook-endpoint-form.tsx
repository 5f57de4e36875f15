import { useMutation } from '@tanstack/react-query';
import { useId } from 'react';
import { useForm } from 'react-hook-form';
import { EVENT_TYPES } from '../../../sdk/events.ts';
import type { WebhookEndpoint, WebhookEndpointChanges, WebhookEventType } from '../api/webhooks.ts';
import { ErrorNotice } from '../components/error-notice.tsx';
import { showFieldErrors } from '../components/field-errors.ts';
import { FieldError, invalid } from '../components/user-fields.tsx';

/** The endpoint's fields as the form holds them. */
interface EndpointFormValues {
  url: string;
  description: string;
  /** None checked: every type (the API's `null`), types added later included. */
  event_types: WebhookEventType[];
  enabled: boolean;
}

/** Props of {@link WebhookEndpointForm}. */
export interface WebhookEndpointFormProps {
  /** The endpoint to edit; absent: a new one. */
  readonly endpoint?: WebhookEndpoint;
  /** Sends the body (a create or a `PATCH`); its failure shows in the form. */
  readonly save: (body: WebhookEndpointChanges & { url: string }) => Promise<unknown>;
  readonly onSaved: () => void;
  readonly onCancel?: () => void;
}

/**
 * Creates or edits a webhook endpoint: its URL, a description, the event types it receives
 * (checkboxes: none checked means every type) and, when editing, whether it is enabled. The
 * API checks the URL (https, public address; docs/contract.md Part B, Events and webhooks) and its
 * field errors show beside the fields.
 */
export function WebhookEndpointForm({ endpoint, save, onSaved, onCancel }: WebhookEndpointFormProps) {
  const id = useId();
  const { register, handleSubmit, setError, reset, formState } = useForm<EndpointFormValues>({
    defaultValues: {
      url: endpoint?.url ?? '',
      description: endpoint?.description ?? '',
      event_types: (endpoint?.event_types ?? []) as WebhookEventType[],
      enabled: endpoint?.enabled ?? true,
    },
  });
  const mutation = useMutation({
    mutationFn: ({ url, description, event_types, enabled }: EndpointFormValues) =>
      save({
        url: url.trim(),
        description: description.trim(),
        event_types: event_types.length > 0 ? event_types : null,
        ...(endpoint ? { enabled } : {}),
      }),
    onSuccess: () => {
      if (!endpoint) reset();
      onSaved();
    },
    onError: (error) => showFieldErrors(error, ['url', 'description', 'event_types'], setError),
  });
  const { errors } = formState;
  const title = endpoint ? 'Edit the webhook endpoint' : 'Add a webhook endpoint';
  return (
    <form class="card form" noValidate aria-labelledby={`${id}-title`} onSubmit={handleSubmit((values) => mutation.mutate(values))}>
      <h3 id={`${id}-title`}>{title}</h3>
      {mutation.isError && <ErrorNotice error={mutation.error} title={endpoint ? 'Could not save the endpoint' : 'Could not add the endpoint'} />}
      <div class="field-row">
        <div class="field">
          <label for={`${id}-url`}>Endpoint URL</label>
          <input
            id={`${id}-url`}
            type="url"
            autoComplete="off"
            spellcheck={false}
            placeholder="https://hooks.example.com/wum"
            {...invalid(`${id}-url-error`, errors.url?.message)}
            {...register('url', { required: 'Enter the URL the deliveries go to, e.g. https://hooks.example.com/wum.' })}
          />
          <FieldError id={`${id}-url-error`} message={errors.url?.message} />
        </div>
        <div class="field">
          <label for={`${id}-description`}>Description (optional)</label>
          <input id={`${id}-description`} autoComplete="off" {...invalid(`${id}-description-error`, errors.description?.message)} {...register('description')} />
          <FieldError id={`${id}-description-error`} message={errors.description?.message} />
        </div>
      </div>
      <fieldset class="field" aria-describedby={`${id}-types-hint`}>
        <legend>Event types</legend>
        <p id={`${id}-types-hint`} class="hint">
          None checked: every type, including types added later.
        </p>
        <div class="products">
          {EVENT_TYPES.map((type) => (
            <label key={type} class="choice">
              <input type="checkbox" value={type} {...register('event_types')} /> {type}
            </label>
          ))}
        </div>
        <FieldError id={`${id}-types-error`} message={errors.event_types?.message} />
      </fieldset>
      {endpoint && (
        <label class="choice">
          <input type="checkbox" {...register('enabled')} /> Enabled (deliveries are sent)
        </label>
      )}
      <div class="actions">
        {onCancel && (
          <button type="button" class="button" onClick={onCancel}>
            Cancel
          </button>
        )}
        <button type="submit" class="button button-primary" disabled={mutation.isPending}>
          {mutation.isPending ? 'Saving…' : endpoint ? 'Save the endpoint' : 'Add endpoint'}
        </button>
      </div>
    </form>
  );
}
