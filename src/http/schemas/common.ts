import { Type, type TSchema } from '@sinclair/typebox';
import { ERROR_CATALOGUE, type ErrorCode } from '../../core/errors.ts';
import type { Pagination } from '../../core/pagination.ts';
import { PAGE_DEFAULTS } from '../../core/pagination.ts';

/** RFC 9457 problem details as wum sends them (SPEC.md Part B, Errors). */
export const ProblemSchema = Type.Object(
  {
    type: Type.String({ examples: ['urn:wum:problem:user_not_found'] }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String({ description: 'Stable snake_case error code.' }),
    request_id: Type.String(),
    errors: Type.Optional(
      Type.Array(Type.Object({ field: Type.String({ examples: ['user.apps[1].role'] }), message: Type.String() })),
    ),
  },
  { $id: 'Problem', description: 'RFC 9457 problem details.' },
);

/** `{$ref: Problem}` response entries for the given codes, grouped by status. */
export function problemResponses(...codes: ErrorCode[]): Record<number, TSchema> {
  const byStatus = new Map<number, string[]>();
  for (const code of codes) {
    const { status } = ERROR_CATALOGUE[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => [status, Type.Ref(ProblemSchema, { description: list.join(', ') })]),
  );
}

/** Query parameters of every paginated listing (SPEC.md Part B, Listing). */
export const PageQuery = {
  page_number: Type.Integer({
    minimum: 1,
    maximum: PAGE_DEFAULTS.maxPageNumber,
    default: PAGE_DEFAULTS.pageNumber,
    description: 'Page to return, from 1.',
  }),
  page_size: Type.Integer({
    minimum: 1,
    maximum: PAGE_DEFAULTS.maxPageSize,
    default: PAGE_DEFAULTS.pageSize,
    description: 'Items per page, 1-100.',
  }),
};

/** The pagination envelope (SPEC.md Part A). */
export const PaginationSchema = Type.Object({
  total_records: Type.Integer(),
  current_page_number: Type.Integer(),
  total_pages: Type.Integer(),
  page_size: Type.Integer(),
});

/** Domain pagination → wire envelope, including `total_count` (= total_records). */
export function toWirePagination(p: Pagination) {
  return {
    pagination: {
      total_records: p.totalRecords,
      current_page_number: p.currentPageNumber,
      total_pages: p.totalPages,
      page_size: p.pageSize,
    },
    total_count: p.totalRecords,
  };
}

/** A timestamp on the wire: RFC 3339 in UTC. */
export const Timestamp = Type.Unsafe<Date | string>({ type: 'string', format: 'date-time' });
/** Nullable timestamp. */
export const NullableTimestamp = Type.Unsafe<Date | string | null>({ type: ['string', 'null'], format: 'date-time' });

/** A string enum as JSON Schema `enum` (clearer errors than a union of constants). */
export function StringEnum<const T extends readonly string[]>(values: T, options: { default?: T[number]; description?: string } = {}) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}
