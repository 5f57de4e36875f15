// Kept for one commit while the imports move to the feature files (the next commit removes it).
export type { PendingStatement, RequestTransaction } from './idempotency/request-transaction.ts';
export type { IdempotencyOutcome, IdempotencyStore, StoredResponse } from './idempotency/idempotency-store.ts';
