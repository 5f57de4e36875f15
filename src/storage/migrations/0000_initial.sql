CREATE TABLE "api_keys" (
	"workspace_id" bigint NOT NULL,
	"id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"prefix" text NOT NULL,
	"key_hash" text NOT NULL,
	"created_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	"last_used_at" timestamp (6) with time zone,
	"revoked_at" timestamp (6) with time zone,
	CONSTRAINT "api_keys__pk" PRIMARY KEY("workspace_id","id")
);
--> statement-breakpoint
CREATE TABLE "audit_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"workspace_id" bigint,
	"occurred_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	"actor_type" text NOT NULL,
	"actor_id" text,
	"request_id" text,
	"action" text NOT NULL,
	"target_type" text NOT NULL,
	"target_id" text NOT NULL,
	"before" jsonb,
	"after" jsonb
);
--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"workspace_id" bigint NOT NULL,
	"key" text NOT NULL,
	"fingerprint" text NOT NULL,
	"created_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	"locked_until" timestamp (6) with time zone,
	"response_status" integer,
	"response_headers" jsonb,
	"response_body" text,
	CONSTRAINT "idempotency_keys__pk" PRIMARY KEY("workspace_id","key")
);
--> statement-breakpoint
CREATE TABLE "products" (
	"name" text PRIMARY KEY NOT NULL,
	"roles" text[] NOT NULL,
	"created_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (6) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "user_apps" (
	"workspace_id" bigint NOT NULL,
	"user_id" bigint NOT NULL,
	"product" text NOT NULL,
	"role" text NOT NULL,
	"position" integer NOT NULL,
	CONSTRAINT "user_apps__pk" PRIMARY KEY("workspace_id","user_id","product","role")
);
--> statement-breakpoint
CREATE TABLE "users" (
	"workspace_id" bigint NOT NULL,
	"id" bigserial NOT NULL,
	"email" text NOT NULL,
	"role" text NOT NULL,
	"first_name" text NOT NULL,
	"last_name" text NOT NULL,
	"status" text NOT NULL,
	"created_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "users__pk" PRIMARY KEY("workspace_id","id"),
	CONSTRAINT "users__role" CHECK ("users"."role" in ('owner', 'non_owner')),
	CONSTRAINT "users__status" CHECK ("users"."status" in ('active', 'deactivated'))
);
--> statement-breakpoint
CREATE TABLE "workspaces" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"subdomain" text NOT NULL,
	"name" text NOT NULL,
	"created_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "workspaces__subdomain" UNIQUE("subdomain")
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "audit_events" ADD CONSTRAINT "audit_events_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "user_apps" ADD CONSTRAINT "user_apps__user" FOREIGN KEY ("workspace_id","user_id") REFERENCES "public"."users"("workspace_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "users" ADD CONSTRAINT "users_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys__workspace_hash" ON "api_keys" USING btree ("workspace_id","key_hash");--> statement-breakpoint
CREATE INDEX "audit_events__workspace_id" ON "audit_events" USING btree ("workspace_id","id");--> statement-breakpoint
CREATE INDEX "idempotency_keys__created_at" ON "idempotency_keys" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "user_apps__product_role" ON "user_apps" USING btree ("product","role");--> statement-breakpoint
CREATE UNIQUE INDEX "users__workspace_email" ON "users" USING btree ("workspace_id",lower("email"));--> statement-breakpoint
CREATE INDEX "users__workspace_status_id" ON "users" USING btree ("workspace_id","status","id");