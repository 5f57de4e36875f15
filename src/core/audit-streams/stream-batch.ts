import type { AuditStream } from './audit-stream.ts';
import type { StreamedAuditEvent } from './audit-stream-repository.ts';
import type { StreamRows } from './stream-queue.ts';

/*
 * A stream's next batch, picked from the rows read after its cursor (docs/api.md, "Audit
 * streams"). The read takes every row of the stream's workspace (or of all, for an operator's
 * stream) whatever the stream's actions, so streams of one workspace at one cursor can share
 * it; each picks its own rows from it.
 */

/** Rows read past the cursor per batch, at most, before the action filter. */
const SCAN_FACTOR = 4;

/** How many rows past the cursor a batch of up to `limit` rows reads. */
export function scanOf(limit: number): number {
  return limit * SCAN_FACTOR;
}

/**
 * The batch of up to `limit` rows of `stream`'s actions among `read`, the rows after its cursor
 * through `settledThrough` in id order (a read of more than {@link scanOf}(`limit`) rows, shared
 * with a stream of larger batches, counts as that many). `through` is where the cursor moves
 * once the batch is delivered: the last row looked at, and `settledThrough` when the read came
 * back short (every row through the horizon seen: the gaps after the last are final too).
 */
export function pickBatch(
  read: readonly StreamedAuditEvent[],
  stream: Pick<AuditStream, 'cursor' | 'actions'>,
  limit: number,
  settledThrough: number,
): StreamRows {
  const scan = scanOf(limit);
  const picked: StreamedAuditEvent[] = [];
  let through = stream.cursor;
  for (const row of read.length > scan ? read.slice(0, scan) : read) {
    const wanted = stream.actions === null || stream.actions.includes(row.action);
    if (wanted && picked.length === limit) return { rows: picked, through };
    through = row.id;
    if (wanted) picked.push(row);
  }
  if (read.length < scan) through = Math.max(through, settledThrough);
  return { rows: picked, through };
}
