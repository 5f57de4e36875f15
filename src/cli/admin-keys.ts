import { Command, InvalidArgumentError, Option, type OptionValues } from '@commander-js/extra-typings';
import { API_KEY_SCOPES, EVERY_SCOPE, type ApiKey, type ApiKeyScope, type CreatedApiKey } from 'wum/sdk';
import { adminClient, UsageError, withJson } from './context.ts';
import { printJson, say, table } from './output.ts';

/** The scopes a key can carry (docs/security.md, "API keys and scopes"); `*` is every scope, present and future. */
export const SCOPES: readonly ApiKeyScope[] = [...API_KEY_SCOPES, EVERY_SCOPE];

/** How long a new key lives unless told otherwise: the console's default (console/src/pages/api-key-form.tsx). */
export const DEFAULT_KEY_EXPIRY = '90d';

/** Milliseconds of each unit `--expires-in` accepts. */
const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parses `--expires-in`: a positive whole number of minutes, hours or days (`30m`, `12h`, `90d`)
 * into the moment it ends, from now.
 * @throws InvalidArgumentError for anything else.
 */
export function expiresIn(value: string, now = Date.now()): string {
  const match = /^(\d+)([mhd])$/.exec(value.trim());
  if (!match || Number(match[1]) < 1) throw new InvalidArgumentError('Give a duration such as 30m, 12h or 90d.');
  return new Date(now + Number(match[1]) * UNIT_MS[match[2]!]!).toISOString();
}

/** Whether `scope` is one of {@link SCOPES}. */
const isScope = (scope: string): scope is ApiKeyScope => (SCOPES as readonly string[]).includes(scope);

/** `--scope`, repeatable, each a scope or a comma-separated list of them. */
const scopeOption = () =>
  new Option('--scope <scopes>', `what the key may call (required; repeat, or separate with commas): ${SCOPES.join(', ')}`).argParser(
    (value: string, previous: ApiKeyScope[] = []) => {
      const given = value.split(',').map((scope) => scope.trim());
      const unknown = given.filter((scope) => !isScope(scope));
      if (unknown.length > 0) throw new InvalidArgumentError(`${unknown.join(', ')}: not a scope. The scopes are ${SCOPES.join(', ')}.`);
      return [...new Set([...previous, ...given.filter(isScope)])];
    },
  );

/**
 * When a new key expires: `--expires-in`, else never with `--no-expiry`, else in
 * {@link DEFAULT_KEY_EXPIRY}; undefined is never.
 */
const expiryOf = (options: { expiresIn?: string; expiry?: boolean }): string | undefined =>
  options.expiresIn ?? (options.expiry === false ? undefined : expiresIn(DEFAULT_KEY_EXPIRY));

/** A key's creator, readable. */
const creator = (k: ApiKey | CreatedApiKey) => k.created_by?.label ?? '';

/** Keys as a table, one row each: never a secret (a listing has none). */
export function keysTable(list: readonly ApiKey[]): string {
  return table(
    ['id', 'name', 'prefix', 'scopes', 'expires_at', 'created_by', 'created_at', 'last_used_at', 'revoked_at'],
    list.map((k) => [k.id, k.name, k.prefix, k.scopes.join(' '), k.expires_at ?? '', creator(k), k.created_at, k.last_used_at ?? '', k.revoked_at ?? '']),
  );
}

/** Adds the options of a new key to `create`: `--name`, `--scope` (required), `--expires-in`, `--no-expiry`. */
export function withNewKeyOptions<Args extends unknown[], Opts extends OptionValues, Globals extends OptionValues>(create: Command<Args, Opts, Globals>) {
  return create
    .option('--name <name>', 'a name to recognise the key by, e.g. okta-scim')
    .addOption(scopeOption())
    .addOption(new Option('--expires-in <duration>', `expire after this long: 30m, 12h, 90d (default: ${DEFAULT_KEY_EXPIRY})`).argParser((v) => expiresIn(v)))
    .addOption(new Option('--no-expiry', 'the key never expires').conflicts('expiresIn'));
}

/** The options {@link withNewKeyOptions} adds, as commander gives them. */
export interface NewKeyOptions {
  readonly name?: string;
  readonly scope?: ApiKeyScope[];
  readonly expiresIn?: string;
  readonly expiry?: boolean;
}

/**
 * The body of a new key from its options: only the scopes given, and the console's expiry
 * unless told otherwise. @throws UsageError without `--scope`.
 */
export function newKeyBody(options: NewKeyOptions): { name?: string; scopes: ApiKeyScope[]; expires_at?: string } {
  if (!options.scope) {
    throw new UsageError(`give the key's scopes with --scope (repeat, or separate with commas): ${SCOPES.join(', ')}; ${EVERY_SCOPE} is every scope.`);
  }
  const expiresAt = expiryOf(options);
  return { ...(options.name ? { name: options.name } : {}), scopes: options.scope, ...(expiresAt ? { expires_at: expiresAt } : {}) };
}

/** Prints a created key (its secret, shown only once) with the sentence `created`. */
export function sayCreated(key: CreatedApiKey, created: string): void {
  say(`${created} It is shown only this once:`);
  say('');
  say(`  export WUM_API_KEY=${key.key}`);
  say('');
  say(`Scopes: ${key.scopes.join(', ')}. Expires: ${key.expires_at ?? 'never'}.`);
}

/**
 * `wum admin keys create|list|revoke <subdomain>`: a workspace's API keys with their names,
 * scopes and expiry (operator API; --admin-url, --admin-token). A new key carries only the
 * scopes given (`--scope` is required, as the console preselects none) and expires in
 * {@link DEFAULT_KEY_EXPIRY} unless `--expires-in` or `--no-expiry` says otherwise: the
 * console's defaults (README, "CLI").
 */
export function keysCommand(): Command {
  const keys = new Command('keys').description("create, list and revoke a workspace's API keys (operator)");
  withJson(
    withNewKeyOptions(
      keys.command('create <subdomain>').description(`create an API key (shown only this once); it expires in ${DEFAULT_KEY_EXPIRY} unless --expires-in or --no-expiry`),
    ),
  ).action(async (subdomain: string, options, command) => {
    const key = await adminClient(command).apiKeys.create(subdomain, newKeyBody(options));
    if (options.json) return printJson(key);
    sayCreated(key, `Created API key ${key.id}${key.name ? ` "${key.name}"` : ''} for ${subdomain}.`);
  });
  withJson(keys.command('list <subdomain>').description('list API keys, revoked ones included (never the secret)')).action(
    async (subdomain: string, options, command) => {
      const list = await adminClient(command).apiKeys.list(subdomain);
      if (options.json) return printJson(list);
      say(keysTable(list));
    },
  );
  withJson(keys.command('revoke <subdomain> <id>').description('revoke an API key (doing it again succeeds too)')).action(
    async (subdomain: string, id: string, options, command) => {
      await adminClient(command).apiKeys.revoke(subdomain, id);
      if (options.json) return printJson({ subdomain, id, revoked: true });
      say(`Revoked API key ${id} of ${subdomain}.`);
    },
  );
  return keys;
}
