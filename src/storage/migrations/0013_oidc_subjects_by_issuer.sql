CREATE TABLE "operator_identities" (
	"issuer" text NOT NULL,
	"email" text NOT NULL,
	"subject" text NOT NULL,
	"created_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "operator_identities__pk" PRIMARY KEY("issuer","email")
);
--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "oidc_issuer" text;--> statement-breakpoint
-- Subjects stored before this migration are of the workspace's provider of the time; where the
-- workspace still has one, they are taken to be of it (the likely case). Where it has none, the
-- issuer stays null and the next sign-in binds the person afresh.
UPDATE "users" SET "oidc_issuer" = p."issuer"
  FROM "workspace_identity_providers" p
  WHERE p."workspace_id" = "users"."workspace_id" AND "users"."oidc_subject" IS NOT NULL;
