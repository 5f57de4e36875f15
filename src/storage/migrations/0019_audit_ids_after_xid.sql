-- An audit row's id is taken only once its transaction has a transaction id (docs/operations.md,
-- "Audit streams"): the stream worker treats every id up to the sequence's last value as final
-- once the transactions open at that moment have ended, which holds only if a transaction that
-- holds an id was already open, with its xid, when the sequence handed the id out.
CREATE FUNCTION "audit_event_id"() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_current_xact_id();
  RETURN nextval('audit_events_id_seq');
END
$$;
--> statement-breakpoint
ALTER TABLE "audit_events" ALTER COLUMN "id" SET DEFAULT "audit_event_id"();
