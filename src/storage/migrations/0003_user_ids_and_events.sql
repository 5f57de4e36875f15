CREATE TABLE "events" (
	"workspace_id" bigint NOT NULL,
	"sequence" bigint NOT NULL,
	"id" text NOT NULL,
	"type" text NOT NULL,
	"created_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	"data" jsonb NOT NULL,
	CONSTRAINT "events__pk" PRIMARY KEY("workspace_id","sequence")
);
--> statement-breakpoint
ALTER TABLE "audit_events" ADD COLUMN "user_id" uuid;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "public_id" uuid DEFAULT gen_random_uuid() NOT NULL;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "external_id" text;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "scim_attributes" jsonb;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "scim_deleted" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "version" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "workspaces" ADD COLUMN "event_sequence" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "events__created_at" ON "events" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "audit_events__workspace_user_id" ON "audit_events" USING btree ("workspace_id","user_id","id") WHERE "audit_events"."user_id" is not null;--> statement-breakpoint
CREATE INDEX "user_apps__workspace_product_role" ON "user_apps" USING btree ("workspace_id","product","role","user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "users__workspace_public_id" ON "users" USING btree ("workspace_id","public_id");--> statement-breakpoint
CREATE INDEX "users__workspace_email_c" ON "users" USING btree ("workspace_id",(lower("email") collate "C"));--> statement-breakpoint
CREATE INDEX "users__workspace_first_name_c" ON "users" USING btree ("workspace_id",(lower("first_name") collate "C"));--> statement-breakpoint
CREATE INDEX "users__workspace_last_name_c" ON "users" USING btree ("workspace_id",(lower("last_name") collate "C"));--> statement-breakpoint
CREATE INDEX "users__workspace_external_id" ON "users" USING btree ("workspace_id","external_id");--> statement-breakpoint
-- Existing user events get the id of the user they are about (looked up by email, which no
-- user could change before this migration), so each user's history is complete.
UPDATE "audit_events" a SET "user_id" = u."public_id" FROM "users" u
WHERE a."target_type" = 'user' AND a."workspace_id" = u."workspace_id" AND lower(a."target_id") = lower(u."email");
