import { Command, InvalidArgumentError, Option } from 'commander';
import type { NewOwnApiKey } from 'wum/sdk';
import { expiresIn, keysTable, SCOPES } from './admin-keys.ts';
import { withJson, workspaceClient } from './context.ts';
import { printJson, say } from './output.ts';

/** `--scope`, repeatable and required: a workspace's key holds only what it is given (docs/api.md, "Self-service"). */
const requiredScopeOption = () =>
  new Option('--scope <scope>', `what the key may call (repeat for several; required): ${SCOPES.join(', ')}`)
    .argParser((value: string, previous: string[] = []) => {
      if (!(SCOPES as readonly string[]).includes(value)) throw new InvalidArgumentError(`Allowed choices are ${SCOPES.join(', ')}.`);
      return [...previous, value];
    })
    .makeOptionMandatory();

/**
 * `wum api-keys create|list|revoke`: the workspace's own API keys through its API (--url,
 * --api-key; the key needs `keys:write`), the self-service counterpart of the operator's
 * `wum admin keys <subdomain>`. A new key never holds a scope the calling key lacks.
 * Source: docs/api.md, "Self-service".
 */
export function workspaceKeysCommand(): Command {
  const keys = new Command('api-keys').description("create, list and revoke the workspace's API keys (needs keys:write)");
  withJson(
    keys
      .command('create')
      .description('create an API key of this workspace (shown only this once)')
      .option('--name <name>', 'a name to recognise the key by, e.g. okta-scim')
      .addOption(requiredScopeOption())
      .addOption(new Option('--expires-in <duration>', 'expire after this long: 30m, 12h, 90d (default: never)').argParser((v) => expiresIn(v))),
  ).action(async (options: { name?: string; scope: string[]; expiresIn?: string; json?: boolean }, command: Command) => {
    const key = await workspaceClient(command).apiKeys.create({
      scopes: options.scope as NewOwnApiKey['scopes'],
      ...(options.name ? { name: options.name } : {}),
      ...(options.expiresIn ? { expires_at: options.expiresIn } : {}),
    });
    if (options.json) return printJson(key);
    say(`Created API key ${key.id}${key.name ? ` "${key.name}"` : ''}. It is shown only this once:`);
    say('');
    say(`  export WUM_API_KEY=${key.key}`);
    say('');
    say(`Scopes: ${key.scopes.join(', ')}. Expires: ${key.expires_at ?? 'never'}.`);
  });
  withJson(keys.command('list').description('list the API keys, revoked ones included (never the secret)')).action(async (options, command: Command) => {
    const list = await workspaceClient(command).apiKeys.list();
    if (options.json) return printJson(list);
    say(keysTable(list));
  });
  withJson(keys.command('revoke <id>').description('revoke an API key (doing it again succeeds too)')).action(async (id: string, options, command: Command) => {
    await workspaceClient(command).apiKeys.revoke(id);
    if (options.json) return printJson({ id, revoked: true });
    say(`Revoked API key ${id}.`);
  });
  return keys;
}
