-- Sign-ins under way are keyed by workspace first, as every tenant table (docs/scaling.md): the
-- callback looks one up by its workspace and the hash of its state.
ALTER TABLE "oidc_sign_ins" DROP CONSTRAINT "oidc_sign_ins_pkey";--> statement-breakpoint
ALTER TABLE "oidc_sign_ins" ADD CONSTRAINT "oidc_sign_ins__pk" PRIMARY KEY("workspace_id","state_hash");
