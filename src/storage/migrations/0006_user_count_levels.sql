-- user_counts holds only derived data: empty it, key it by level as well, and count the users
-- again at every level (block = id >> bits of the level, USER_COUNT_LEVEL_BITS in schema.ts:
-- 512 ids, 32 of those, 32 of those, 32 of those, then the whole workspace; slot = id % 16 as
-- the service spreads them).
DELETE FROM "user_counts";--> statement-breakpoint
ALTER TABLE "user_counts" ADD COLUMN "level" smallint NOT NULL;--> statement-breakpoint
ALTER TABLE "user_counts" DROP CONSTRAINT "user_counts__pk";
--> statement-breakpoint
ALTER TABLE "user_counts" ADD CONSTRAINT "user_counts__pk" PRIMARY KEY("workspace_id","status","level","block","slot");--> statement-breakpoint
INSERT INTO "user_counts" ("workspace_id", "status", "level", "block", "slot", "user_count")
SELECT u."workspace_id", u."status", l."level", u."id" >> l."bits", (u."id" % 16)::smallint, count(*)
FROM "users" u CROSS JOIN (VALUES (0::smallint, 9), (1::smallint, 14), (2::smallint, 19), (3::smallint, 24), (4::smallint, 63)) AS l("level", "bits")
GROUP BY 1, 2, 3, 4, 5;
