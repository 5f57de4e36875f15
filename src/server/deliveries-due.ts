import type { DeliveriesDue } from '../core/webhooks/delivery-queue.ts';

/** Shortest time between two announcements of one process, in ms. */
const ANNOUNCE_GAP_MS = 10;

/** Options of {@link announceGathered}. */
export interface GatheredAnnouncements {
  /** Sends one announcement (a `NOTIFY`); a rejection is passed to `onError`. */
  readonly announce: () => Promise<void>;
  /** What to do with a failed announcement (the workers' poll still finds the deliveries). */
  readonly onError: (error: unknown) => void;
  /** Shortest time between two announcements, in ms; default 10. */
  readonly gapMs?: number;
}

/**
 * A {@link DeliveriesDue} signal that announces at once when nothing was announced for
 * `gapMs`, and otherwise once more at the end of the gap for all the signals it gathered: at
 * hundreds of changes a second, about a hundred `NOTIFY` a second at most, and each change's
 * announcement leaves within `gapMs` plus one in flight.
 */
export function announceGathered(options: GatheredAnnouncements): DeliveriesDue {
  const gapMs = options.gapMs ?? ANNOUNCE_GAP_MS;
  let busy = false;
  let again = false;
  const fire = (): void => {
    busy = true;
    again = false;
    void options
      .announce()
      .catch(options.onError)
      .finally(() => {
        setTimeout(() => {
          busy = false;
          if (again) fire();
        }, gapMs).unref();
      });
  };
  return () => {
    if (busy) again = true;
    else fire();
  };
}
