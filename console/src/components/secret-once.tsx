import { useId } from 'react';
import { CopyButton } from './copy-button.tsx';

/**
 * A new secret (an API key's plaintext, a webhook signing secret), shown this once: read-only,
 * selectable, with a copy button and a plain warning. Announced as an alert.
 * @param what - what the secret is, for the warning: "key" (the default) or "secret".
 */
export function SecretOnce({ label, secret, onDone, what = 'key' }: { label: string; secret: string; onDone: () => void; what?: string }) {
  const id = useId();
  return (
    <div class="notice notice-secret" role="alert">
      <p class="notice-title">Copy the {what} now: it is shown only this once</p>
      <div class="field">
        <label for={id}>{label}</label>
        <div class="secret-row">
          <input id={id} class="secret" readOnly value={secret} spellcheck={false} onFocus={(event) => event.currentTarget.select()} />
          <CopyButton text={secret} label={`Copy ${label}`} />
        </div>
      </div>
      <button type="button" class="button" onClick={onDone}>
        I have copied it
      </button>
    </div>
  );
}
