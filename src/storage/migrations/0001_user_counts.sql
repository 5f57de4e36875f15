CREATE TABLE "user_counts" (
	"workspace_id" bigint NOT NULL,
	"status" text NOT NULL,
	"slot" smallint NOT NULL,
	"user_count" bigint NOT NULL,
	CONSTRAINT "user_counts__pk" PRIMARY KEY("workspace_id","status","slot")
);
--> statement-breakpoint
ALTER TABLE "user_counts" ADD CONSTRAINT "user_counts_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "users__active_owners" ON "users" USING btree ("workspace_id") WHERE "users"."status" = 'active' and "users"."role" = 'owner';--> statement-breakpoint
-- Existing users are counted once, into slot 0; later changes spread over the slots, and
-- the count is always the sum over them.
INSERT INTO "user_counts" ("workspace_id", "status", "slot", "user_count")
SELECT "workspace_id", "status", 0, count(*) FROM "users" GROUP BY "workspace_id", "status";
