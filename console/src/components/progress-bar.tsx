import { useId } from 'react';

/** Props of {@link ProgressBar}. */
export interface ProgressBarProps {
  /** What is in progress, e.g. "Importing rows". */
  readonly label: string;
  readonly done: number;
  /** Undefined while the total is not known yet (an indeterminate bar). */
  readonly total?: number;
}

/** A labelled `<progress>` with the counts in words, for every long action (docs/console.md). */
export function ProgressBar({ label, done, total }: ProgressBarProps) {
  const id = useId();
  return (
    <div class="progress">
      <label for={id}>
        {label}: {done}
        {total === undefined ? '' : ` of ${total}`}
      </label>
      <progress id={id} max={total ?? undefined} value={total === undefined ? undefined : done} />
    </div>
  );
}
