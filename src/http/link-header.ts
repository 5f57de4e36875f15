import type { FastifyRequest } from 'fastify';
import type { Pagination } from '../core/pagination.ts';

/**
 * The page number the page links are serialized with, then replaced: a NUL, which the query's
 * serializer always writes as `%00`, so `page_number=%00` right after `?` or `&` can only be
 * that one pair (`set` leaves one `page_number`; any other key or value has its `=` and `&`
 * percent-encoded); a fragment, if the request target had one, follows the query.
 */
const PAGE_MARK = '\u0000';
const MARKED_PAIR = /[?&]page_number=%00(?=[&#]|$)/;

/**
 * Builds an RFC 8288 `Link` value with `first`, `prev`, `next` and `last` page URLs, keeping
 * the request's other query parameters. `prev` is omitted on page 1, `next` on the last page
 * and beyond. The URL is parsed and serialized once, not once per link: four serializations
 * cost a page about 3 % of the server's CPU (docs/performance.md, "The fixed cost of a request").
 * Source: docs/contract.md Part B, Listing.
 */
export function paginationLinks(request: FastifyRequest, pagination: Pagination): string {
  const url = new URL(request.url, `${request.protocol}://${request.host}`);
  url.searchParams.set('page_number', PAGE_MARK);
  url.searchParams.set('page_size', String(pagination.pageSize));
  const href = url.href;
  const mark = href.search(MARKED_PAIR) + '?page_number='.length;
  const [before, after] = [href.slice(0, mark), href.slice(mark + '%00'.length)];
  const link = (page: number, rel: string) => `<${before}${page}${after}>; rel="${rel}"`;
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
