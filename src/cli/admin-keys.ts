import { Command, InvalidArgumentError, Option } from 'commander';
import { API_KEY_SCOPES, EVERY_SCOPE, type ApiKey, type ApiKeyScope, type CreatedApiKey } from 'wum/sdk';
import { adminClient, withJson } from './context.ts';
import { printJson, say, table } from './output.ts';

/** The scopes a key can carry (docs/security.md, "API keys and scopes"); `*` is every scope, present and future. */
export const SCOPES: readonly ApiKeyScope[] = [...API_KEY_SCOPES, EVERY_SCOPE];

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

/** `--scope`, repeatable. */
const scopeOption = () =>
  new Option('--scope <scope>', `what the key may call (repeat for several; default: every scope): ${SCOPES.join(', ')}`).argParser(
    (value: string, previous: string[] = []) => {
      if (!(SCOPES as readonly string[]).includes(value)) throw new InvalidArgumentError(`Allowed choices are ${SCOPES.join(', ')}.`);
      return [...previous, value];
    },
  );

/** A key's creator, readable. */
const creator = (k: ApiKey | CreatedApiKey) => k.created_by?.label ?? '';

/** Keys as a table, one row each: never a secret (a listing has none). */
export function keysTable(list: readonly ApiKey[]): string {
  return table(
    ['id', 'name', 'prefix', 'scopes', 'expires_at', 'created_by', 'created_at', 'last_used_at', 'revoked_at'],
    list.map((k) => [k.id, k.name, k.prefix, k.scopes.join(' '), k.expires_at ?? '', creator(k), k.created_at, k.last_used_at ?? '', k.revoked_at ?? '']),
  );
}

/**
 * `keys create|list|revoke <subdomain>`: a workspace's API keys with their names, scopes and
 * expiry (operator API; --admin-url, --admin-token). Mounted as `wum admin keys` and `wum keys`.
 */
export function keysCommand(): Command {
  const keys = new Command('keys').description("create, list and revoke a workspace's API keys (operator)");
  withJson(
    keys
      .command('create <subdomain>')
      .description('create an API key (shown only this once)')
      .option('--name <name>', 'a name to recognise the key by, e.g. okta-scim')
      .addOption(scopeOption())
      .addOption(new Option('--expires-in <duration>', 'expire after this long: 30m, 12h, 90d (default: never)').argParser((v) => expiresIn(v))),
  ).action(async (subdomain: string, options, command: Command) => {
    const key = await adminClient(command).apiKeys.create(subdomain, {
      ...(options.name ? { name: options.name } : {}),
      ...(options.scope ? { scopes: options.scope } : {}),
      ...(options.expiresIn ? { expires_at: options.expiresIn } : {}),
    });
    if (options.json) return printJson(key);
    say(`Created API key ${key.id}${key.name ? ` "${key.name}"` : ''} for ${subdomain}. It is shown only this once:`);
    say('');
    say(`  export WUM_API_KEY=${key.key}`);
    say('');
    say(`Scopes: ${key.scopes.join(', ')}. Expires: ${key.expires_at ?? 'never'}.`);
  });
  withJson(keys.command('list <subdomain>').description('list API keys, revoked ones included (never the secret)')).action(
    async (subdomain: string, options, command: Command) => {
      const list = await adminClient(command).apiKeys.list(subdomain);
      if (options.json) return printJson(list);
      say(keysTable(list));
    },
  );
  withJson(keys.command('revoke <subdomain> <id>').description('revoke an API key (doing it again succeeds too)')).action(
    async (subdomain: string, id: string, options, command: Command) => {
      await adminClient(command).apiKeys.revoke(subdomain, id);
      if (options.json) return printJson({ subdomain, id, revoked: true });
      say(`Revoked API key ${id} of ${subdomain}.`);
    },
  );
  return keys;
}
