-- One index of pending webhook deliveries instead of two (docs/performance.md, "Webhooks"): the
-- delivery worker's per-endpoint probes read the index by due time alone and filtered by endpoint,
-- rather than `webhook_deliveries__due` (endpoint, due time), which serves them and the pending
-- gauge's count; and every insert and claim of a delivery wrote an entry into both.
DROP INDEX "webhook_deliveries__pending";
