/** A request for one page; both fields are integers ≥ 1 (docs/contract.md Part B, Listing). */
export interface PageRequest {
  readonly pageNumber: number;
  readonly pageSize: number;
}

/** The pagination envelope of docs/contract.md Part A, in domain (camelCase) form. */
export interface Pagination {
  readonly totalRecords: number;
  readonly currentPageNumber: number;
  readonly totalPages: number;
  readonly pageSize: number;
}

/**
 * Default and bounds of page parameters: defaults 1 and 30, page_size 1–100 (docs/contract.md).
 * page_number stops at 2^31 - 1 so that every offset stays an exact integer in SQL.
 */
export const PAGE_DEFAULTS = { pageNumber: 1, pageSize: 30, maxPageSize: 100, maxPageNumber: 2_147_483_647 } as const;

/** Rows to skip for a page: `(pageNumber - 1) * pageSize`. */
export function pageOffset(page: PageRequest): number {
  return (page.pageNumber - 1) * page.pageSize;
}

/**
 * Builds the pagination envelope; `totalPages = ceil(totalRecords / pageSize)`, 0 when empty.
 * Source: docs/contract.md Part B, Listing.
 */
export function paginate(page: PageRequest, totalRecords: number): Pagination {
  return {
    totalRecords,
    currentPageNumber: page.pageNumber,
    totalPages: Math.ceil(totalRecords / page.pageSize),
    pageSize: page.pageSize,
  };
}

/** One page of items with its envelope. */
export interface Page<T> {
  readonly items: readonly T[];
  readonly pagination: Pagination;
}

/** Rows of one page plus the total over all pages. */
export interface Slice<T> {
  readonly rows: readonly T[];
  readonly total: number;
}
