import { Link } from 'wouter-preact';
import { useId } from 'react';
import type { UrlParams } from '../url-state.ts';

/** Page sizes offered (the API allows 1-100). */
export const PAGE_SIZES = [10, 30, 50, 100] as const;

/** Props of {@link Pager}. */
export interface PagerProps {
  /** The API's pagination envelope. */
  readonly pagination: { total_records: number; current_page_number: number; total_pages: number; page_size: number };
  /** What is counted, plural, e.g. "users". */
  readonly noun: string;
  /** The noun for one, when dropping the plural's "s" does not make it (e.g. "delivery"). */
  readonly one?: string;
  readonly url: UrlParams;
  /** Names of the URL parameters (a page with two listings keeps them apart). */
  readonly pageParam?: string;
  readonly sizeParam?: string;
  /** Label of the navigation landmark. */
  readonly label?: string;
}

/**
 * Pagination whose state is the URL (`page`, `size`): real links, so back/forward, a new tab
 * and a shared address all land on the same page; exact totals from the API.
 */
export function Pager({ pagination, noun, one = noun.replace(/s$/, ''), url, pageParam = 'page', sizeParam = 'size', label = 'Pagination' }: PagerProps) {
  const sizeId = useId();
  const { current_page_number: page, total_pages: pages, total_records: total } = pagination;
  const link = (target: number, label: string) =>
    target >= 1 && target <= pages && target !== page ? (
      <Link href={url.hrefWith({ [pageParam]: target === 1 ? undefined : target })} class="button">
        {label}
      </Link>
    ) : (
      <span class="button" aria-disabled="true">
        {label}
      </span>
    );
  return (
    <nav class="pager" aria-label={label}>
      <p class="pager-status" aria-live="polite">
        {total === 0
          ? `No ${noun}`
          : `Page ${page.toLocaleString('en')} of ${pages.toLocaleString('en')} · ${total.toLocaleString('en')} ${total === 1 ? one : noun}`}
      </p>
      <div class="pager-links">
        {link(1, 'First')}
        {link(page - 1, 'Previous')}
        {link(page + 1, 'Next')}
        {link(pages, 'Last')}
      </div>
      <div class="field field-inline">
        <label for={sizeId}>Per page</label>
        <select
          id={sizeId}
          value={String(pagination.page_size)}
          onChange={(event) => {
            const size = event.currentTarget.value;
            url.update({ [sizeParam]: size === '30' ? undefined : size, [pageParam]: undefined });
          }}
        >
          {PAGE_SIZES.map((size) => (
            <option key={size} value={String(size)}>
              {size}
            </option>
          ))}
        </select>
      </div>
    </nav>
  );
}
