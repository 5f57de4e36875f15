import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef, useState } from 'react';

/** Props of {@link ConfirmDialog}. */
export interface ConfirmDialogProps {
  readonly open: boolean;
  readonly title: string;
  readonly children: ComponentChildren;
  /** Label of the confirming button, e.g. "Deactivate 3 users". */
  readonly confirmLabel: string;
  /** The person must type this text before the action is allowed (e.g. a workspace's subdomain). */
  readonly typeToConfirm?: string;
  /** Styles the confirming button as destructive. */
  readonly danger?: boolean;
  readonly onConfirm: () => void;
  readonly onCancel: () => void;
}

/** What {@link useConfirmation} returns. */
export interface Confirmation<T> {
  /** What is being confirmed, while the dialog is open. */
  readonly subject: T | undefined;
  /** Opens the dialog about `subject`. */
  readonly ask: (subject: T) => void;
  /** The dialog's `open`, `onConfirm` and `onCancel`. */
  readonly dialog: Pick<ConfirmDialogProps, 'open' | 'onConfirm' | 'onCancel'>;
}

/**
 * The state of a {@link ConfirmDialog} about one thing (a row, an item): `ask(subject)` opens
 * it; confirming runs `act(subject)` and closes it; cancelling only closes it.
 */
export function useConfirmation<T>(act: (subject: T) => void): Confirmation<T> {
  const [subject, setSubject] = useState<{ value: T } | undefined>();
  return {
    subject: subject?.value,
    ask: (value) => setSubject({ value }),
    dialog: {
      open: subject !== undefined,
      onCancel: () => setSubject(undefined),
      onConfirm: () => {
        if (subject) act(subject.value);
        setSubject(undefined);
      },
    },
  };
}

/**
 * A modal confirmation built on the HTML `<dialog>` element, whose `showModal()` gives what a
 * modal needs without a library: the rest of the page inert, focus moved in and restored on
 * close, Escape to cancel. Nothing destructive happens without it (docs/console.md).
 */
export function ConfirmDialog({ open, title, children, confirmLabel, typeToConfirm, danger, onConfirm, onCancel }: ConfirmDialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const [typed, setTyped] = useState('');
  const titleId = useId();
  const inputId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) {
      setTyped('');
      dialog.showModal();
    } else if (!open && dialog.open) dialog.close();
  }, [open]);
  const allowed = typeToConfirm === undefined || typed === typeToConfirm;
  return (
    <dialog
      ref={ref}
      class="dialog"
      aria-labelledby={titleId}
      onCancel={(event) => {
        event.preventDefault();
        onCancel();
      }}
    >
      <form
        method="dialog"
        onSubmit={(event) => {
          event.preventDefault();
          if (allowed) onConfirm();
        }}
      >
        <h2 id={titleId}>{title}</h2>
        <div class="dialog-body">{children}</div>
        {typeToConfirm !== undefined && (
          <div class="field">
            <label for={inputId}>
              Type <strong>{typeToConfirm}</strong> to confirm
            </label>
            <input
              id={inputId}
              autoComplete="off"
              spellcheck={false}
              value={typed}
              onInput={(event) => setTyped(event.currentTarget.value)}
            />
          </div>
        )}
        <div class="actions">
          <button type="button" class="button" onClick={onCancel}>
            Cancel
          </button>
          <button type="submit" class={danger ? 'button button-danger' : 'button button-primary'} disabled={!allowed}>
            {confirmLabel}
          </button>
        </div>
      </form>
    </dialog>
  );
}
