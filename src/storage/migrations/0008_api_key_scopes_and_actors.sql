ALTER TABLE "api_keys" ADD COLUMN "name" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "scopes" text[] DEFAULT '{users:read,users:write,products:read,events:read,scim}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "expires_at" timestamp (6) with time zone;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "created_by" jsonb;--> statement-breakpoint
ALTER TABLE "audit_events" ADD COLUMN "actor_label" text;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "actor" jsonb;--> statement-breakpoint
-- The operator's changes were recorded as actor 'admin'; the actor types are now person, api_key, scim, operator, system.
UPDATE "audit_events" SET "actor_type" = 'operator' WHERE "actor_type" = 'admin';--> statement-breakpoint
UPDATE "audit_events" SET "actor_label" = 'system' WHERE "actor_type" = 'system';--> statement-breakpoint
UPDATE "audit_events" SET "actor_label" = 'operator' WHERE "actor_type" = 'operator';--> statement-breakpoint
UPDATE "audit_events" a SET "actor_label" = k."prefix" FROM "api_keys" k
  WHERE a."actor_type" IN ('api_key', 'scim') AND k."workspace_id" = a."workspace_id" AND k."id"::text = a."actor_id";
