CREATE TABLE "lifecycle_marks" (
	"workspace_id" bigint NOT NULL,
	"user_id" bigint NOT NULL,
	"kind" text NOT NULL,
	"due_at" timestamp (6) with time zone NOT NULL,
	"created_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "lifecycle_marks__pk" PRIMARY KEY("workspace_id","user_id","kind","due_at")
);
--> statement-breakpoint
CREATE TABLE "workspace_policies" (
	"workspace_id" bigint PRIMARY KEY NOT NULL,
	"inactivity_after" text,
	"inactivity_after_seconds" bigint,
	"inactivity_applies_to" text,
	"inactivity_warn_before" text,
	"inactivity_warn_before_seconds" bigint,
	"expiry_warn_before" text,
	"expiry_warn_before_seconds" bigint,
	"updated_at" timestamp (6) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "user_apps" ADD COLUMN "expires_at" timestamp (6) with time zone;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "expires_at" timestamp (6) with time zone;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "last_active_at" timestamp (6) with time zone;--> statement-breakpoint
ALTER TABLE "lifecycle_marks" ADD CONSTRAINT "lifecycle_marks__user" FOREIGN KEY ("workspace_id","user_id") REFERENCES "public"."users"("workspace_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "workspace_policies" ADD CONSTRAINT "workspace_policies_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "user_apps__due_expiry" ON "user_apps" USING btree ("expires_at") WHERE "user_apps"."expires_at" is not null;--> statement-breakpoint
CREATE INDEX "users__due_expiry" ON "users" USING btree ("expires_at") WHERE "users"."status" = 'active' and "users"."expires_at" is not null;--> statement-breakpoint
CREATE INDEX "users__workspace_expires_at" ON "users" USING btree ("workspace_id","expires_at") WHERE "users"."expires_at" is not null;--> statement-breakpoint
CREATE INDEX "users__workspace_last_seen" ON "users" USING btree ("workspace_id",coalesce("last_active_at", "created_at")) WHERE "users"."status" = 'active';