ALTER TABLE "api_keys" ALTER COLUMN "scopes" SET DEFAULT '{*}'::text[];--> statement-breakpoint
CREATE INDEX "console_sessions__user" ON "console_sessions" USING btree ("workspace_id","user_id") WHERE "console_sessions"."user_id" is not null;--> statement-breakpoint
CREATE INDEX "console_sessions__api_key" ON "console_sessions" USING btree ("workspace_id","api_key_id") WHERE "console_sessions"."api_key_id" is not null;--> statement-breakpoint
-- Keys that hold every scope there was (keys made before scopes existed, workspaces' first keys, keys made with
-- every scope) hold every scope, present and future: '{*}'. A key that lists fewer keeps its list exactly, so no
-- narrow key gains a scope (owners:write included) by migration.
UPDATE "api_keys" SET "scopes" = '{*}'::text[]
  WHERE "scopes" @> '{users:read,users:write,products:read,events:read,scim}'::text[];
--> statement-breakpoint
-- Sessions that were only suspended until now end for good: a person's whose user is no longer an active owner or
-- has another email than at sign-in, a revoked key's, and a key's opened before its workspace's identity provider.
UPDATE "console_sessions" cs SET "ended_at" = now() FROM "users" u
  WHERE cs."ended_at" IS NULL AND u."workspace_id" = cs."workspace_id" AND u."id" = cs."user_id"
    AND (u."status" <> 'active' OR u."role" <> 'owner' OR u."scim_deleted" OR u."email" <> cs."actor"->>'label');
--> statement-breakpoint
UPDATE "console_sessions" cs SET "ended_at" = now() FROM "api_keys" k
  WHERE cs."ended_at" IS NULL AND k."workspace_id" = cs."workspace_id" AND k."id" = cs."api_key_id" AND k."revoked_at" IS NOT NULL;
--> statement-breakpoint
UPDATE "console_sessions" cs SET "ended_at" = now() FROM "workspace_identity_providers" p
  WHERE cs."ended_at" IS NULL AND cs."api_key_id" IS NOT NULL AND p."workspace_id" = cs."workspace_id"
    AND cs."created_at" < p."updated_at";
