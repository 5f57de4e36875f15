import type { UseQueryResult } from '@tanstack/react-query';
import type { FieldErrors, UseFormRegister } from 'react-hook-form';
import type { Product } from '../api/users.ts';
import { useScopes } from '../api/session.ts';
import { ErrorNotice } from './error-notice.tsx';

/** The editable fields of a user as the add and edit forms hold them (apps as `product:role`). */
export interface UserFormValues {
  email: string;
  first_name: string;
  last_name: string;
  role: 'owner' | 'non_owner';
  apps: string[];
  /** The last day of access (`YYYY-MM-DD`, a UTC day); '' for never. */
  expires_at: string;
}

/** `product:role` strings (the pickers' values) as the API's apps. */
export function toApps(values: readonly string[]): Array<{ name: string; role: string }> {
  return values.map((value) => {
    const colon = value.indexOf(':');
    return { name: value.slice(0, colon), role: value.slice(colon + 1) };
  });
}

/** An error message under a field, referenced by the field's `aria-describedby`. */
export function FieldError({ id, message }: { id: string; message?: string | undefined }) {
  return message ? (
    <p id={id} class="field-error">
      {message}
    </p>
  ) : null;
}

/** `aria-invalid`/`aria-describedby` of a field with an error. */
export function invalid(id: string, message?: string): { 'aria-invalid'?: 'true'; 'aria-describedby'?: string } {
  return message ? { 'aria-invalid': 'true', 'aria-describedby': id } : {};
}

/**
 * The fields the add and edit forms share: names, the workspace role (radio buttons) and the
 * product roles as checkboxes grouped by product, from the catalogue, so role names are picked,
 * never typed, and the optional last day of access (docs/console.md, "Access that ends on time"). Errors from the API's `errors[]` show beside their field.
 */
export function UserFields({
  register,
  errors,
  catalogue,
  idPrefix,
}: {
  register: UseFormRegister<UserFormValues>;
  errors: FieldErrors<UserFormValues>;
  /** The catalogue as {@link useCatalogue} reads it. */
  catalogue: UseQueryResult<readonly Product[]>;
  idPrefix: string;
}) {
  const id = (name: string) => `${idPrefix}-${name}`;
  const products = catalogue.data ?? [];
  // One message, the true one: no scope to read the catalogue, a failure to read it, or an empty catalogue.
  const lacking = useScopes().lacking('products:read');
  return (
    <>
      <div class="field-row">
        <div class="field">
          <label for={id('first')}>First name</label>
          <input id={id('first')} autoComplete="off" {...invalid(id('first-error'), errors.first_name?.message)} {...register('first_name')} />
          <FieldError id={id('first-error')} message={errors.first_name?.message} />
        </div>
        <div class="field">
          <label for={id('last')}>Last name</label>
          <input id={id('last')} autoComplete="off" {...invalid(id('last-error'), errors.last_name?.message)} {...register('last_name')} />
          <FieldError id={id('last-error')} message={errors.last_name?.message} />
        </div>
      </div>
      <fieldset class="field" {...invalid(id('role-error'), errors.role?.message)}>
        <legend>Workspace role</legend>
        <label class="choice">
          <input type="radio" value="non_owner" {...register('role')} /> Non-owner
        </label>
        <label class="choice">
          <input type="radio" value="owner" {...register('role')} /> Owner (can manage the workspace)
        </label>
        <FieldError id={id('role-error')} message={errors.role?.message} />
      </fieldset>
      <div class="field">
        <label for={id('expires')}>Access ends</label>
        <input
          id={id('expires')}
          type="date"
          min={new Date().toISOString().slice(0, 10)}
          aria-invalid={errors.expires_at?.message ? 'true' : undefined}
          aria-describedby={errors.expires_at?.message ? `${id('expires-hint')} ${id('expires-error')}` : id('expires-hint')}
          {...register('expires_at')}
        />
        <p id={id('expires-hint')} class="field-hint">
          Optional: the last day of access (through the end of that day, UTC). Empty: never ends.
        </p>
        <FieldError id={id('expires-error')} message={errors.expires_at?.message} />
      </div>
      <fieldset class="field" {...invalid(id('apps-error'), errors.apps?.message)}>
        <legend>Product roles</legend>
        {lacking && <p class="notice">Product roles cannot be picked here. {lacking}</p>}
        {catalogue.isError && <ErrorNotice error={catalogue.error} title="Could not load the products" />}
        {catalogue.isSuccess && products.length === 0 && <p>The catalogue has no products yet.</p>}
        <div class="products">
          {products.map((product) => (
            <fieldset key={product.name} class="product">
              <legend>{product.name}</legend>
              {product.roles.map((role) => (
                <label key={role} class="choice">
                  <input type="checkbox" value={`${product.name}:${role}`} {...register('apps')} /> {role}
                </label>
              ))}
            </fieldset>
          ))}
        </div>
        <FieldError id={id('apps-error')} message={errors.apps?.message} />
      </fieldset>
    </>
  );
}
