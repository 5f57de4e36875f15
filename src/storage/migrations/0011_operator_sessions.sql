CREATE TABLE "operator_sessions" (
	"id_hash" text PRIMARY KEY NOT NULL,
	"email" text NOT NULL,
	"issuer" text NOT NULL,
	"actor" jsonb NOT NULL,
	"created_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp (6) with time zone NOT NULL,
	"ended_at" timestamp (6) with time zone
);
--> statement-breakpoint
CREATE TABLE "operator_sign_ins" (
	"state_hash" text PRIMARY KEY NOT NULL,
	"code_verifier" text NOT NULL,
	"nonce" text NOT NULL,
	"expires_at" timestamp (6) with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "operator_sessions__expires_at" ON "operator_sessions" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "operator_sign_ins__expires_at" ON "operator_sign_ins" USING btree ("expires_at");