/** The kinds of actor the audit trail and the events feed name (docs/security.md, "Actors"). */
export const ACTOR_TYPES = ['person', 'api_key', 'scim', 'operator', 'system', 'policy'] as const;

/** One of {@link ACTOR_TYPES}. */
export type ActorType = (typeof ACTOR_TYPES)[number];

/**
 * Who makes a change, for the audit trail and the events feed: a person signed in to the
 * console, an API key of the workspace (through the external API, or through SCIM: `scim`,
 * with the key's id), the operator (admin API), or the server itself (`system`).
 * `id` is stable (the key's id, the person's user id), `label` readable (the key's name and
 * prefix, the person's email). `requestId` ties the change to the request's logs.
 */
export interface Actor {
  readonly type: ActorType;
  readonly id: string | null;
  readonly label: string | null;
  readonly requestId: string | null;
  /**
   * The scopes it acts with: its key's (`['*']` for a person signed in, who holds what the
   * workspace grants owners). A change that needs a scope of its own beside its route's (making
   * an owner needs `owners:write`) checks it here. Absent for the operator and the server,
   * whom no scope limits.
   */
  readonly scopes?: readonly string[];
}

/** An actor as the wire shows it: `{type, id, label}`. */
export interface ActorJson {
  readonly type: ActorType;
  readonly id: string | null;
  readonly label: string | null;
}

/** The wire form of an actor (without its request id, which the audit event carries apart). */
export function toActorJson(actor: Actor): ActorJson {
  return { type: actor.type, id: actor.id, label: actor.label };
}

/** The readable label of an API key: its name and prefix, e.g. `okta-scim (wum_AbCd1234)`. */
export function apiKeyLabel(name: string, prefix: string): string {
  return name ? `${name} (${prefix})` : prefix;
}

/** The actor of changes the server makes on its own (e.g. the demo workspace at first start). */
export const SYSTEM_ACTOR: Actor = Object.freeze({ type: 'system', id: null, label: 'system', requestId: null });
