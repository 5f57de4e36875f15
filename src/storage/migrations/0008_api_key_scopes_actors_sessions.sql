CREATE TABLE "console_sessions" (
	"workspace_id" bigint NOT NULL,
	"id_hash" text NOT NULL,
	"api_key_id" uuid,
	"actor" jsonb NOT NULL,
	"created_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp (6) with time zone NOT NULL,
	"ended_at" timestamp (6) with time zone,
	CONSTRAINT "console_sessions__pk" PRIMARY KEY("workspace_id","id_hash")
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "name" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "scopes" text[] DEFAULT '{users:read,users:write,products:read,events:read,scim}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "expires_at" timestamp (6) with time zone;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "created_by" jsonb;--> statement-breakpoint
ALTER TABLE "audit_events" ADD COLUMN "actor_label" text;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "actor" jsonb;--> statement-breakpoint
ALTER TABLE "console_sessions" ADD CONSTRAINT "console_sessions_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "console_sessions__expires_at" ON "console_sessions" USING btree ("expires_at");--> statement-breakpoint
-- The operator's changes were recorded as actor 'admin'; the actor types are now person, api_key, scim, operator, system.
UPDATE "audit_events" SET "actor_type" = 'operator' WHERE "actor_type" = 'admin';--> statement-breakpoint
UPDATE "audit_events" SET "actor_label" = 'system' WHERE "actor_type" = 'system';--> statement-breakpoint
UPDATE "audit_events" SET "actor_label" = 'operator' WHERE "actor_type" = 'operator';--> statement-breakpoint
UPDATE "audit_events" a SET "actor_label" = k."prefix" FROM "api_keys" k
  WHERE a."actor_type" IN ('api_key', 'scim') AND k."workspace_id" = a."workspace_id" AND k."id"::text = a."actor_id";
