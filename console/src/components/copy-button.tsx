import { useState } from 'react';

/** Props of {@link CopyButton}. */
export interface CopyButtonProps {
  /** The text copied to the clipboard. */
  readonly text: string;
  /** Accessible name, e.g. "Copy the API key". */
  readonly label: string;
}

/** Copies `text` to the clipboard and says so (politely, to screen readers too). */
export function CopyButton({ text, label }: CopyButtonProps) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  return (
    <span class="copy">
      <button
        type="button"
        class="button"
        aria-label={label}
        onClick={() =>
          navigator.clipboard.writeText(text).then(
            () => setState('copied'),
            () => setState('failed'),
          )
        }
      >
        Copy
      </button>
      <span role="status" class="copy-status">
        {state === 'copied' ? 'Copied.' : state === 'failed' ? 'Could not copy: select the text and copy it.' : ''}
      </span>
    </span>
  );
}
