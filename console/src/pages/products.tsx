import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { useForm } from 'react-hook-form';
import { WumApiError } from '../../../sdk/errors.ts';
import { adminApi, type CatalogueProduct } from '../api/admin.ts';
import { Chips } from '../components/chips.tsx';
import { ConfirmDialog } from '../components/confirm-dialog.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { showFieldErrors } from '../components/field-errors.ts';
import { Page } from '../components/page.tsx';
import { FieldError, invalid } from '../components/user-fields.tsx';
import { dateTime } from '../format.ts';
import { Table } from '../components/table.tsx';

/** Roles as typed: comma-separated, trimmed, empty parts dropped. */
function splitRoles(text: string): string[] {
  return text
    .split(',')
    .map((role) => role.trim())
    .filter(Boolean);
}

/**
 * A refusal explained: `product_in_use` says an active user still holds the product or the
 * role, and what to do about it; any other error as it came.
 */
function CatalogueError({ error, title }: { error: unknown; title: string }) {
  return (
    <>
      <ErrorNotice error={error} title={title} />
      {error instanceof WumApiError && error.code === 'product_in_use' && (
        <p class="notice">
          An active user of some workspace still holds this product, or the role you removed. The catalogue never takes a role away
          from an active user: change those users’ product roles (or deactivate them) first, then try again. In a workspace’s
          console, the “Product role” filter of the users list finds them.
        </p>
      )}
    </>
  );
}

interface ProductForm {
  name: string;
  roles: string;
}

/** Creates a product, or replaces an existing product's roles (`PUT /admin/v1/products/{name}`). */
function ProductEditor({ product, onDone }: { product?: CatalogueProduct; onDone: () => void }) {
  const queryClient = useQueryClient();
  const id = useId();
  const { register, handleSubmit, setError, formState } = useForm<ProductForm>({
    defaultValues: { name: product?.name ?? '', roles: product?.roles.join(', ') ?? '' },
  });
  const save = useMutation({
    mutationFn: ({ name, roles }: ProductForm) => adminApi.putProduct(name.trim(), splitRoles(roles)),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['catalogue'] });
      void queryClient.invalidateQueries({ queryKey: ['products'] });
      onDone();
    },
    onError: (error) => showFieldErrors(error, ['roles'], setError),
  });
  const { errors } = formState;
  return (
    <form class="card form" noValidate aria-label={product ? `Edit ${product.name}` : 'Add a product'} onSubmit={handleSubmit((values) => save.mutate(values))}>
      {save.isError && <CatalogueError error={save.error} title="Could not save the product" />}
      <div class="field-row">
        {!product && (
          <div class="field">
            <label for={`${id}-name`}>Product name</label>
            <input
              id={`${id}-name`}
              autoComplete="off"
              spellcheck={false}
              {...invalid(`${id}-name-error`, errors.name?.message)}
              {...register('name', { required: 'Enter the product’s name, e.g. crm.' })}
            />
            <FieldError id={`${id}-name-error`} message={errors.name?.message} />
          </div>
        )}
        <div class="field">
          <label for={`${id}-roles`}>{product ? `Roles of ${product.name}` : 'Roles'} (comma-separated, in order)</label>
          <input
            id={`${id}-roles`}
            autoComplete="off"
            spellcheck={false}
            {...invalid(`${id}-roles-error`, errors.roles?.message)}
            {...register('roles', { validate: (text) => splitRoles(text).length > 0 || 'Give at least one role.' })}
          />
          <FieldError id={`${id}-roles-error`} message={errors.roles?.message} />
        </div>
      </div>
      <div class="actions">
        <button type="button" class="button" onClick={onDone}>
          Cancel
        </button>
        <button type="submit" class="button button-primary" disabled={save.isPending}>
          {product ? 'Save roles' : 'Add product'}
        </button>
      </div>
    </form>
  );
}

/**
 * The product catalogue (operator): every product and its roles; add, edit the roles of, and
 * remove a product. A change that would take a role from an active user is refused
 * (`409 product_in_use`), and the page explains what to do. Source: docs/contract.md Part B, Operator
 * interface.
 */
export function ProductsPage() {
  const queryClient = useQueryClient();
  const products = useQuery({ queryKey: ['catalogue'], queryFn: ({ signal }) => adminApi.listProducts(signal) });
  const [editing, setEditing] = useState<string | undefined>();
  const [deleting, setDeleting] = useState<string | undefined>();
  const remove = useMutation({
    mutationFn: (name: string) => adminApi.deleteProduct(name),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: ['catalogue'] }),
  });
  return (
    <Page
      title="Products"
      actions={
        <button type="button" class="button button-primary" onClick={() => setEditing('')}>
          Add a product
        </button>
      }
    >
      {editing === '' && <ProductEditor onDone={() => setEditing(undefined)} />}
      {remove.isError && <CatalogueError error={remove.error} title={`Could not remove ${remove.variables}`} />}
      {products.isError && <ErrorNotice error={products.error} title="Could not load the products" onRetry={() => void products.refetch()} />}
      {products.data && (
        <Table caption="Products, by name" columns={['Product', 'Roles', 'Last changed', 'Actions']}>
          {products.data.map((product) => (
            <tr key={product.name}>
              <th scope="row">{product.name}</th>
              <td>
                {editing === product.name ? (
                  <ProductEditor product={product} onDone={() => setEditing(undefined)} />
                ) : (
                  <Chips items={product.roles} />
                )}
              </td>
              <td>{dateTime(product.updated_at)}</td>
              <td class="row-actions">
                <button type="button" class="button" aria-label={`Edit the roles of ${product.name}`} onClick={() => setEditing(product.name)}>
                  Edit
                </button>
                <button type="button" class="button button-danger" aria-label={`Remove ${product.name}`} onClick={() => setDeleting(product.name)}>
                  Remove
                </button>
              </td>
            </tr>
          ))}
        </Table>
      )}
      <ConfirmDialog
        open={deleting !== undefined}
        title={`Remove the product ${deleting ?? ''}?`}
        confirmLabel="Remove the product"
        danger
        onCancel={() => setDeleting(undefined)}
        onConfirm={() => {
          remove.mutate(deleting!);
          setDeleting(undefined);
        }}
      >
        <p>Workspaces can no longer give its roles. This is refused while an active user holds one of them.</p>
      </ConfirmDialog>
    </Page>
  );
}
