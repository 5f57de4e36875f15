import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useForm } from 'react-hook-form';
import { Link } from 'wouter-preact';
import { adminApi, type CreatedWorkspace } from '../api/admin.ts';
import { ConfirmDialog } from '../components/confirm-dialog.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { showFieldErrors } from '../components/field-errors.ts';
import { Page } from '../components/page.tsx';
import { Pager, PAGE_SIZES } from '../components/pager.tsx';
import { SecretOnce } from '../components/secret-once.tsx';
import { FieldError, invalid } from '../components/user-fields.tsx';
import { dateTime } from '../format.ts';
import { positiveParam, useUrlParams } from '../url-state.ts';
import { Table } from '../components/table.tsx';

interface NewWorkspace {
  subdomain: string;
  name: string;
}

/** Creates a workspace; its first key is then shown once. */
function CreateWorkspace({ onCreated }: { onCreated: (created: CreatedWorkspace) => void }) {
  const { register, handleSubmit, setError, reset, formState } = useForm<NewWorkspace>({ defaultValues: { subdomain: '', name: '' } });
  const create = useMutation({
    mutationFn: ({ subdomain, name }: NewWorkspace) => adminApi.createWorkspace({ subdomain: subdomain.trim(), ...(name.trim() ? { name: name.trim() } : {}) }),
    onSuccess: (created) => {
      reset();
      onCreated(created);
    },
    onError: (error) => showFieldErrors(error, ['subdomain', 'name'], setError),
  });
  const { errors } = formState;
  return (
    <form class="card form" noValidate aria-labelledby="create-title" onSubmit={handleSubmit((values) => create.mutate(values))}>
      <h2 id="create-title">Create a workspace</h2>
      {create.isError && <ErrorNotice error={create.error} title="Could not create the workspace" />}
      <div class="field-row">
        <div class="field">
          <label for="ws-subdomain">Subdomain</label>
          <input
            id="ws-subdomain"
            autoComplete="off"
            spellcheck={false}
            {...invalid('ws-subdomain-error', errors.subdomain?.message)}
            {...register('subdomain', { required: 'Enter a subdomain, e.g. acme.' })}
          />
          <FieldError id="ws-subdomain-error" message={errors.subdomain?.message} />
        </div>
        <div class="field">
          <label for="ws-name">Name (optional)</label>
          <input id="ws-name" autoComplete="off" {...invalid('ws-name-error', errors.name?.message)} {...register('name')} />
          <FieldError id="ws-name-error" message={errors.name?.message} />
        </div>
      </div>
      <button type="submit" class="button button-primary" disabled={create.isPending}>
        {create.isPending ? 'Creating…' : 'Create workspace'}
      </button>
    </form>
  );
}

/**
 * The workspaces (operator): a page of them in the URL, create (the first key shown once,
 * with a copy button) and delete (after typing the subdomain). Source: docs/contract.md Part B,
 * Operator interface.
 */
export function WorkspacesPage() {
  const url = useUrlParams();
  const queryClient = useQueryClient();
  const page = positiveParam(url.params, 'page', 1);
  const size = positiveParam(url.params, 'size', 30);
  const query = { page_number: page, page_size: (PAGE_SIZES as readonly number[]).includes(size) ? size : 30 };
  const workspaces = useQuery({
    queryKey: ['workspaces', query],
    queryFn: ({ signal }) => adminApi.listWorkspaces(query, signal),
    placeholderData: keepPreviousData,
  });
  const [created, setCreated] = useState<CreatedWorkspace | undefined>();
  const [deleting, setDeleting] = useState<string | undefined>();
  const remove = useMutation({
    mutationFn: (subdomain: string) => adminApi.deleteWorkspace(subdomain),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: ['workspaces'] }),
  });
  return (
    <Page title="Workspaces">
      {created && (
        <SecretOnce label={`API key of ${created.subdomain}`} secret={created.api_key.key} onDone={() => setCreated(undefined)} />
      )}
      <CreateWorkspace
        onCreated={(workspace) => {
          setCreated(workspace);
          void queryClient.invalidateQueries({ queryKey: ['workspaces'] });
        }}
      />
      {remove.isError && <ErrorNotice error={remove.error} title="Could not delete the workspace" />}
      {remove.isSuccess && (
        <p class="notice notice-success" role="status">
          Deleted {remove.variables}.
        </p>
      )}
      {workspaces.isError && <ErrorNotice error={workspaces.error} title="Could not load the workspaces" onRetry={() => void workspaces.refetch()} />}
      {workspaces.data && (
        <>
          <Table caption="Workspaces, oldest first" columns={['Subdomain', 'Name', 'Created', 'Actions']}>
            {workspaces.data.workspaces.map((workspace) => (
              <tr key={workspace.subdomain}>
                <th scope="row">
                  <Link href={`/workspaces/${workspace.subdomain}`}>{workspace.subdomain}</Link>
                </th>
                <td>{workspace.name}</td>
                <td>{dateTime(workspace.created_at)}</td>
                <td>
                  <button type="button" class="button button-danger" aria-label={`Delete ${workspace.subdomain}`} onClick={() => setDeleting(workspace.subdomain)}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </Table>
          <Pager pagination={workspaces.data.pagination} noun="workspaces" url={url} />
        </>
      )}
      <ConfirmDialog
        open={deleting !== undefined}
        title={`Delete the workspace ${deleting ?? ''}?`}
        confirmLabel="Delete the workspace"
        danger
        typeToConfirm={deleting ?? ''}
        onCancel={() => setDeleting(undefined)}
        onConfirm={() => {
          remove.mutate(deleting!);
          setDeleting(undefined);
        }}
      >
        <p>This deletes the workspace with all its users, API keys and audit trail, for good. It cannot be undone.</p>
      </ConfirmDialog>
    </Page>
  );
}
