-- user_counts holds only derived data: empty it, key it by block of user ids as well, and
-- count the users again (block = id / 16384, USER_COUNT_BLOCK_IDS in schema.ts).
DELETE FROM "user_counts";--> statement-breakpoint
ALTER TABLE "user_counts" ADD COLUMN "block" bigint NOT NULL;--> statement-breakpoint
ALTER TABLE "user_counts" DROP CONSTRAINT "user_counts__pk";
--> statement-breakpoint
ALTER TABLE "user_counts" ADD CONSTRAINT "user_counts__pk" PRIMARY KEY("workspace_id","status","block","slot");--> statement-breakpoint
INSERT INTO "user_counts" ("workspace_id", "status", "block", "slot", "user_count")
SELECT "workspace_id", "status", "id" / 16384, 0, count(*) FROM "users" GROUP BY "workspace_id", "status", "id" / 16384;
