import type { FastifyRequest } from 'fastify';
import type { Pagination } from '../core/pagination.ts';

/**
 * Builds an RFC 8288 `Link` value with `first`, `prev`, `next` and `last` page URLs, keeping
 * the request's other query parameters. `prev` is omitted on page 1, `next` on the last page
 * and beyond. Source: docs/contract.md Part B, Listing.
 */
export function paginationLinks(request: FastifyRequest, pagination: Pagination): string {
  const url = new URL(request.url, `${request.protocol}://${request.host}`);
  const link = (page: number, rel: string) => {
    url.searchParams.set('page_number', String(page));
    url.searchParams.set('page_size', String(pagination.pageSize));
    return `<${url.href}>; rel="${rel}"`;
  };
  const last = Math.max(pagination.totalPages, 1);
  const current = pagination.currentPageNumber;
  const links = [link(1, 'first')];
  if (current > 1) links.push(link(Math.min(current - 1, last), 'prev'));
  if (current < pagination.totalPages) links.push(link(current + 1, 'next'));
  links.push(link(last, 'last'));
  return links.join(', ');
}

/**
 * Builds the `Link` value of a listing read by cursor: `first` (the listing without the
 * cursor) and, unless `nextCursor` is null, `next` with `starting_after=<nextCursor>`; the
 * request's other query parameters are kept, `page_number` is dropped. Source: RFC 8288;
 * docs/api.md, "Audit trail".
 */
export function cursorLinks(request: FastifyRequest, nextCursor: number | null): string {
  const url = new URL(request.url, `${request.protocol}://${request.host}`);
  url.searchParams.delete('page_number');
  url.searchParams.delete('starting_after');
  const links = [`<${url.href}>; rel="first"`];
  if (nextCursor !== null) {
    url.searchParams.set('starting_after', String(nextCursor));
    links.push(`<${url.href}>; rel="next"`);
  }
  return links.join(', ');
}
