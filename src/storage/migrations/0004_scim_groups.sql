CREATE TABLE "scim_groups" (
	"workspace_id" bigint NOT NULL,
	"id" uuid NOT NULL,
	"product" text NOT NULL,
	"role" text NOT NULL,
	"external_id" text,
	"created_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "scim_groups__pk" PRIMARY KEY("workspace_id","id"),
	CONSTRAINT "scim_groups__workspace_role" UNIQUE("workspace_id","product","role")
);
--> statement-breakpoint
ALTER TABLE "scim_groups" ADD CONSTRAINT "scim_groups_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;