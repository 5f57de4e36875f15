import type { ComponentChildren } from 'preact';

/** Props of {@link Table}. */
export interface TableProps {
  /** Says what the table lists and in what order, for screen readers (visually hidden). */
  readonly caption: ComponentChildren;
  /** The column headers, in order. */
  readonly columns: readonly string[];
  /** True while newer rows are on their way (the rows shown are dimmed and `aria-busy`). */
  readonly busy?: boolean;
  /** The `<tr>` rows. */
  readonly children: ComponentChildren;
}

/** A plain data table in its scrolling frame: a hidden caption, column headers, the rows given. */
export function Table({ caption, columns, busy, children }: TableProps) {
  return (
    <div class="table-wrap">
      <table class="table" aria-busy={busy ? 'true' : undefined}>
        <caption class="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            {columns.map((column) => (
              <th key={column} scope="col">
                {column}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}
