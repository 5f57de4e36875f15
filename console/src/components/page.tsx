import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'react';

/** True once the first page has rendered: later pages take focus (a client-side navigation). */
let navigated = false;

/** Props of {@link Page}. */
export interface PageProps {
  /** The page's heading, also the document title. */
  readonly title: string;
  /** Buttons or links beside the heading. */
  readonly actions?: ComponentChildren;
  readonly children: ComponentChildren;
}

/**
 * A page: its `<h1>` and the document title. After a client-side navigation the heading takes
 * focus, so a screen reader announces the new page and Tab starts from it (WAI-ARIA APG,
 * "Managing focus" for single-page applications).
 */
export function Page({ title, actions, children }: PageProps) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · wum console`;
  }, [title]);
  useEffect(() => {
    if (navigated) heading.current?.focus();
    navigated = true;
  }, []);
  return (
    <>
      <div class="page-head">
        <h1 ref={heading} tabIndex={-1}>
          {title}
        </h1>
        {actions && <div class="page-actions">{actions}</div>}
      </div>
      {children}
    </>
  );
}
