CREATE TABLE "audit_streams" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"workspace_id" bigint,
	"name" text NOT NULL,
	"format" text NOT NULL,
	"actions" text[],
	"destination_type" text NOT NULL,
	"destination" jsonb NOT NULL,
	"credentials" text NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"cursor" bigint NOT NULL,
	"last_delivered_at" timestamp (6) with time zone,
	"last_error" text,
	"failing_since" timestamp (6) with time zone,
	"failures" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	"claim_id" uuid,
	"claimed_until" timestamp (6) with time zone,
	"created_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "audit_streams__format" CHECK ("audit_streams"."format" in ('json', 'ocsf')),
	CONSTRAINT "audit_streams__status" CHECK ("audit_streams"."status" in ('active', 'failing', 'paused')),
	CONSTRAINT "audit_streams__destination_type" CHECK ("audit_streams"."destination_type" in ('https', 'splunk_hec', 's3', 'syslog'))
);
--> statement-breakpoint
ALTER TABLE "audit_streams" ADD CONSTRAINT "audit_streams_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "audit_streams__workspace_id" ON "audit_streams" USING btree ("workspace_id","created_at");--> statement-breakpoint
CREATE INDEX "audit_streams__due" ON "audit_streams" USING btree ("next_attempt_at") WHERE "audit_streams"."status" <> 'paused';