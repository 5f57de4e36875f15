import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import {
  flexRender,
  getCoreRowModel,
  useReactTable,
  type ColumnDef,
  type RowSelectionState,
  type SortingState,
  type Updater,
} from '@tanstack/react-table';
import { useEffect, useId, useMemo, useRef, useState } from 'react';
import { Link } from 'wouter-preact';
import { usersApi, type ListUsersQuery, type User } from '../api/users.ts';
import { useCatalogue, USERS_KEY } from '../api/queries.ts';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ScopeNotice } from '../components/scope-notice.tsx';
import { useScopes } from '../api/session.ts';
import { Page } from '../components/page.tsx';
import { Pager, PAGE_SIZES } from '../components/pager.tsx';
import { dateTime, expiringWithin, expiryLabel, roleLabel, userHref } from '../format.ts';
import { choiceParam, positiveParam, useUrlParams, type UrlParams } from '../url-state.ts';
import { BulkDeactivate } from './users-bulk.tsx';
import { ExportButton } from './users-export.tsx';

const STATUSES = ['active', 'deactivated', 'all'] as const;
const ROLES = ['', 'owner', 'non_owner'] as const;
const SORTS = ['created_at', '-created_at', 'email', '-email', 'expires_at', '-expires_at'] as const;
/** The window of the "expiring within 30 days" filter (`expiring=30` in the URL). */
const EXPIRING_DAYS = 30;
type Sort = (typeof SORTS)[number];
/** Wait after the last keystroke before searching: results within 300 ms of it (docs/console.md). */
const SEARCH_DELAY_MS = 60;

/** The listing's filters as the URL holds them (`q`, `status`, `role`, `app`, `expiring`, `sort`, `page`, `size`). */
function readFilters(params: URLSearchParams): ListUsersQuery & { page_number: number; page_size: number } {
  const size = positiveParam(params, 'size', 30);
  const role = choiceParam(params, 'role', ROLES, '');
  return {
    ...(params.get('q') ? { q: params.get('q')! } : {}),
    status: choiceParam(params, 'status', STATUSES, 'active'),
    ...(role ? { role } : {}),
    ...(params.get('app') ? { app: params.get('app')! } : {}),
    ...(params.get('expiring') === String(EXPIRING_DAYS) ? { expires_before: expiringWithin(EXPIRING_DAYS) } : {}),
    sort: choiceParam(params, 'sort', SORTS, 'created_at'),
    page_number: positiveParam(params, 'page', 1),
    page_size: (PAGE_SIZES as readonly number[]).includes(size) ? size : 30,
  };
}

/** The sort parameter as TanStack Table's sorting state, and back. */
function toSorting(sort: Sort): SortingState {
  return [{ id: sort.replace('-', ''), desc: sort.startsWith('-') }];
}
function fromSorting(sorting: SortingState): Sort | undefined {
  const [first] = sorting;
  if (!first) return undefined;
  return `${first.desc ? '-' : ''}${first.id}` as Sort;
}

/** Search as you type: the box follows the URL (back/forward) and the URL follows the box, a moment after the last key. */
function SearchBox({ url, q }: { url: UrlParams; q: string }) {
  const id = useId();
  const [text, setText] = useState(q);
  // What this box last put in the URL: a different `q` came from elsewhere (back/forward, a link).
  const pushed = useRef(q);
  useEffect(() => {
    if (q !== pushed.current) {
      pushed.current = q;
      setText(q);
    }
  }, [q]);
  useEffect(() => {
    if (text === pushed.current) return undefined;
    const timer = setTimeout(() => {
      pushed.current = text.trim() ? text : '';
      url.update({ q: pushed.current || undefined, page: undefined }, { replace: true });
    }, SEARCH_DELAY_MS);
    return () => clearTimeout(timer);
  }, [text]);
  return (
    <div class="field field-search">
      <label for={id}>Search</label>
      <input
        id={id}
        type="search"
        value={text}
        placeholder="Email, first or last name"
        autoComplete="off"
        spellcheck={false}
        onInput={(event) => setText(event.currentTarget.value)}
      />
    </div>
  );
}

/** A select bound to one URL parameter; choosing resets to page 1. */
function FilterSelect({
  url,
  name,
  label,
  value,
  children,
}: {
  url: UrlParams;
  name: string;
  label: string;
  value: string;
  children: preact.ComponentChildren;
}) {
  const id = useId();
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <select id={id} value={value} onChange={(event) => url.update({ [name]: event.currentTarget.value, page: undefined })}>
        {children}
      </select>
    </div>
  );
}

function Filters({ url, filters }: { url: UrlParams; filters: ReturnType<typeof readFilters> }) {
  const catalogue = useCatalogue();
  return (
    <div class="filters" role="search" aria-label="Find users">
      <SearchBox url={url} q={filters.q ?? ''} />
      <FilterSelect url={url} name="status" label="Status" value={filters.status ?? 'active'}>
        <option value="active">Active</option>
        <option value="deactivated">Deactivated</option>
        <option value="all">All</option>
      </FilterSelect>
      <FilterSelect url={url} name="role" label="Workspace role" value={filters.role ?? ''}>
        <option value="">Any</option>
        <option value="owner">Owner</option>
        <option value="non_owner">Non-owner</option>
      </FilterSelect>
      <FilterSelect url={url} name="app" label="Product role" value={filters.app ?? ''}>
        <option value="">Any</option>
        {(catalogue.data ?? []).map((product) => (
          <optgroup key={product.name} label={product.name}>
            <option value={product.name}>{product.name}: any role</option>
            {product.roles.map((role) => (
              <option key={role} value={`${product.name}:${role}`}>
                {product.name}: {role}
              </option>
            ))}
          </optgroup>
        ))}
      </FilterSelect>
      <FilterSelect url={url} name="expiring" label="Access ends" value={filters.expires_before ? String(EXPIRING_DAYS) : ''}>
        <option value="">Any time or never</option>
        <option value={String(EXPIRING_DAYS)}>Expiring within {EXPIRING_DAYS} days</option>
      </FilterSelect>
      <FilterSelect url={url} name="sort" label="Sort by" value={filters.sort ?? 'created_at'}>
        <option value="created_at">Oldest first</option>
        <option value="-created_at">Newest first</option>
        <option value="email">Email A–Z</option>
        <option value="-email">Email Z–A</option>
        <option value="expires_at">Access ends soonest</option>
        <option value="-expires_at">Access ends latest</option>
      </FilterSelect>
    </div>
  );
}

/** The table's columns: selection (for a session that may deactivate), then what a person needs to recognise a user. */
function columns(canWrite: boolean): ColumnDef<User>[] {
  const all: ColumnDef<User>[] = [
    {
      id: 'select',
      enableSorting: false,
      header: ({ table }) => (
        <input
          type="checkbox"
          aria-label="Select every active user on this page"
          checked={table.getIsAllRowsSelected()}
          indeterminate={table.getIsSomeRowsSelected()}
          disabled={!table.getRowModel().rows.some((row) => row.getCanSelect())}
          onChange={table.getToggleAllRowsSelectedHandler()}
        />
      ),
      cell: ({ row }) => (
        <input
          type="checkbox"
          aria-label={`Select ${row.original.email}`}
          checked={row.getIsSelected()}
          disabled={!row.getCanSelect()}
          onChange={row.getToggleSelectedHandler()}
        />
      ),
    },
    {
      // An accessor makes the column sortable; the sorting itself is the API's (`sort`).
      id: 'email',
      accessorKey: 'email',
      header: 'Email',
      cell: ({ row }) => <Link href={userHref(row.original.email)}>{row.original.email}</Link>,
    },
    { id: 'first_name', header: 'First name', enableSorting: false, cell: ({ row }) => row.original.first_name },
    { id: 'last_name', header: 'Last name', enableSorting: false, cell: ({ row }) => row.original.last_name },
    { id: 'role', header: 'Workspace role', enableSorting: false, cell: ({ row }) => roleLabel(row.original.role) },
    {
      id: 'apps',
      header: 'Product roles',
      enableSorting: false,
      cell: ({ row }) => (
        <ul class="chips">
          {row.original.apps.map((app) => (
            <li key={`${app.name}:${app.role}`} class="chip">
              {app.name}: {app.role}
            </li>
          ))}
        </ul>
      ),
    },
    {
      id: 'status',
      header: 'Status',
      enableSorting: false,
      cell: ({ row }) => <span class={`status status-${row.original.status}`}>{row.original.status === 'active' ? 'Active' : 'Deactivated'}</span>,
    },
    {
      id: 'expires_at',
      accessorKey: 'expires_at',
      header: 'Access ends',
      cell: ({ row }) =>
        row.original.expires_at ? <span title={dateTime(row.original.expires_at)}>{expiryLabel(row.original.expires_at)}</span> : 'never',
    },
    { id: 'created_at', accessorKey: 'created_at', header: 'Created', cell: ({ row }) => dateTime(row.original.created_at) },
  ];
  return canWrite ? all : all.filter((column) => column.id !== 'select');
}

/** What to say when a page has no users: what to do next. */
function EmptyState({ url, filtered, canWrite }: { url: UrlParams; filtered: boolean; canWrite: boolean }) {
  return (
    <div class="empty" role="status">
      {filtered ? (
        <>
          <p>No users match these filters.</p>
          <button type="button" class="button" onClick={() => url.update({ q: undefined, status: undefined, role: undefined, app: undefined, expiring: undefined, page: undefined })}>
            Clear the filters
          </button>
        </>
      ) : (
        <>
          <p>This workspace has no active users yet.</p>
          {canWrite && (
            <p>
              <Link href="/users/new">Add a user</Link> or <Link href="/import">import a CSV file</Link> of users.
            </p>
          )}
        </>
      )}
    </div>
  );
}

/**
 * The users of the workspace: search as you type, filters for status, workspace role, product
 * role and access ending within 30 days, sort, and pagination, all in the URL; exact totals; bulk deactivation and CSV
 * export of the current filter. One `GET /users` per state (docs/contract.md Part B, Finding users).
 */
export function UsersPage() {
  const url = useUrlParams();
  const filters = readFilters(url.params);
  const queryClient = useQueryClient();
  const users = useQuery({
    queryKey: [USERS_KEY, 'list', filters],
    queryFn: ({ signal }) => usersApi.list(filters, signal),
    placeholderData: keepPreviousData,
  });
  const [rowSelection, setRowSelection] = useState<RowSelectionState>({});
  const stateKey = JSON.stringify(filters);
  useEffect(() => setRowSelection({}), [stateKey]);
  const scopes = useScopes();
  const canWrite = scopes.allows('users:write');
  const lacking = scopes.lacking('users:write');
  const tableColumns = useMemo(() => columns(canWrite), [canWrite]);
  const table = useReactTable({
    data: users.data?.users ?? [],
    columns: tableColumns,
    getCoreRowModel: getCoreRowModel(),
    getRowId: (user) => user.email,
    manualPagination: true,
    manualSorting: true,
    enableSortingRemoval: false,
    enableMultiSort: false,
    enableRowSelection: (row) => canWrite && row.original.status === 'active',
    state: { rowSelection, sorting: toSorting(filters.sort as Sort) },
    onRowSelectionChange: setRowSelection,
    onSortingChange: (updater: Updater<SortingState>) => {
      const next = typeof updater === 'function' ? updater(toSorting(filters.sort as Sort)) : updater;
      url.update({ sort: fromSorting(next) === 'created_at' ? undefined : fromSorting(next), page: undefined });
    },
  });
  const selected = Object.keys(rowSelection);
  const filtered = Boolean(filters.q || filters.role || filters.app || filters.expires_before || filters.status !== 'active');
  const { page_number: _page, page_size: _size, ...exportFilters } = filters;

  return (
    <Page
      title="Users"
      actions={
        <>
          {canWrite && (
            <>
              <Link href="/users/new" class="button button-primary">
                Add user
              </Link>
              <Link href="/import" class="button">
                Import CSV
              </Link>
            </>
          )}
          <ExportButton filters={exportFilters} total={users.data?.pagination.total_records} />
        </>
      }
    >
      {lacking && <ScopeNotice what="Adding, importing, changing and deactivating users" reason={lacking} />}
      <Filters url={url} filters={filters} />
      <BulkDeactivate
        emails={selected}
        onDone={() => {
          setRowSelection({});
          void queryClient.invalidateQueries({ queryKey: [USERS_KEY] });
        }}
      />
      {users.isError && <ErrorNotice error={users.error} title="Could not load the users" onRetry={() => void users.refetch()} />}
      {users.isPending && <p role="status">Loading users…</p>}
      {users.data && users.data.pagination.total_records === 0 && <EmptyState url={url} filtered={filtered} canWrite={canWrite} />}
      {users.data && users.data.users.length > 0 && (
        <div class="table-wrap">
          <table class="table" aria-busy={users.isFetching ? 'true' : 'false'} aria-describedby="users-caption">
            <caption id="users-caption" class="visually-hidden">
              Users, {users.data.pagination.total_records} in all
            </caption>
            <thead>
              {table.getHeaderGroups().map((group) => (
                <tr key={group.id}>
                  {group.headers.map((header) => {
                    const sorted = header.column.getIsSorted();
                    return (
                      <th
                        key={header.id}
                        scope="col"
                        class={header.id === 'select' ? 'col-select' : undefined}
                        aria-sort={sorted === 'asc' ? 'ascending' : sorted === 'desc' ? 'descending' : undefined}
                      >
                        {header.column.getCanSort() ? (
                          <button type="button" class="sort" onClick={header.column.getToggleSortingHandler()}>
                            {flexRender(header.column.columnDef.header, header.getContext())}
                            <span aria-hidden="true">{sorted === 'asc' ? ' ▲' : sorted === 'desc' ? ' ▼' : ' ↕'}</span>
                          </button>
                        ) : (
                          flexRender(header.column.columnDef.header, header.getContext())
                        )}
                      </th>
                    );
                  })}
                </tr>
              ))}
            </thead>
            <tbody>
              {table.getRowModel().rows.map((row) => (
                <tr key={row.id} class={row.getIsSelected() ? 'selected' : undefined}>
                  {row.getVisibleCells().map((cell) =>
                    cell.column.id === 'email' ? (
                      <th key={cell.id} scope="row">
                        {flexRender(cell.column.columnDef.cell, cell.getContext())}
                      </th>
                    ) : (
                      <td key={cell.id}>{flexRender(cell.column.columnDef.cell, cell.getContext())}</td>
                    ),
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {users.data && users.data.pagination.total_records > 0 && <Pager pagination={users.data.pagination} noun="users" url={url} />}
    </Page>
  );
}
