CREATE TABLE "user_import_jobs" (
	"workspace_id" bigint NOT NULL,
	"id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"status" text NOT NULL,
	"format" text NOT NULL,
	"actor" jsonb NOT NULL,
	"rows_total" integer,
	"rows_done" integer DEFAULT 0 NOT NULL,
	"added" integer DEFAULT 0 NOT NULL,
	"reactivated" integer DEFAULT 0 NOT NULL,
	"skipped" integer DEFAULT 0 NOT NULL,
	"rejected" integer DEFAULT 0 NOT NULL,
	"error" text,
	"created_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	"uploaded_at" timestamp (6) with time zone,
	"started_at" timestamp (6) with time zone,
	"completed_at" timestamp (6) with time zone,
	"lease_owner" text,
	"lease_until" timestamp (6) with time zone,
	CONSTRAINT "user_import_jobs__pk" PRIMARY KEY("workspace_id","id"),
	CONSTRAINT "user_import_jobs__status" CHECK ("user_import_jobs"."status" in ('queued', 'running', 'completed', 'failed', 'cancelled'))
);
--> statement-breakpoint
CREATE TABLE "user_import_rows" (
	"workspace_id" bigint NOT NULL,
	"job_id" uuid NOT NULL,
	"row_number" integer NOT NULL,
	"email" text NOT NULL,
	"payload" jsonb,
	"outcome" text,
	"code" text,
	"detail" text,
	CONSTRAINT "user_import_rows__pk" PRIMARY KEY("workspace_id","job_id","row_number")
);
--> statement-breakpoint
ALTER TABLE "user_import_jobs" ADD CONSTRAINT "user_import_jobs_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "user_import_rows" ADD CONSTRAINT "user_import_rows__job" FOREIGN KEY ("workspace_id","job_id") REFERENCES "public"."user_import_jobs"("workspace_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "user_import_jobs__one_active" ON "user_import_jobs" USING btree ("workspace_id") WHERE "user_import_jobs"."status" in ('queued', 'running');--> statement-breakpoint
CREATE INDEX "user_import_jobs__unfinished" ON "user_import_jobs" USING btree ("lease_until") WHERE "user_import_jobs"."status" in ('queued', 'running');--> statement-breakpoint
CREATE INDEX "user_import_jobs__workspace_created" ON "user_import_jobs" USING btree ("workspace_id","created_at");--> statement-breakpoint
CREATE INDEX "user_import_rows__pending" ON "user_import_rows" USING btree ("workspace_id","job_id","row_number") WHERE "user_import_rows"."outcome" is null;