import { Command } from '@commander-js/extra-typings';
import type { NewOwnApiKey } from 'wum/sdk';
import { DEFAULT_KEY_EXPIRY, keysTable, newKeyBody, sayCreated, withNewKeyOptions } from './admin-keys.ts';
import { withJson, workspaceClient } from './context.ts';
import { printJson, say } from './output.ts';

/**
 * `wum keys create|list|revoke`: the workspace's own API keys through its API (--url,
 * --api-key; the key needs `keys:write`), the self-service counterpart of the operator's
 * `wum admin keys <subdomain>`, with the same options and defaults (`--scope` required, 90
 * days unless told otherwise). A new key never holds a scope the calling key lacks.
 * Source: docs/api.md, "Self-service".
 */
export function workspaceKeysCommand(): Command {
  const keys = new Command('keys').description("create, list and revoke the workspace's API keys (needs keys:write)");
  withJson(
    withNewKeyOptions(
      keys.command('create').description(`create an API key of this workspace (shown only this once); it expires in ${DEFAULT_KEY_EXPIRY} unless --expires-in or --no-expiry`),
    ),
  ).action(async (options, command) => {
    const key = await workspaceClient(command).apiKeys.create(newKeyBody(options) as NewOwnApiKey);
    if (options.json) return printJson(key);
    sayCreated(key, `Created API key ${key.id}${key.name ? ` "${key.name}"` : ''}.`);
  });
  withJson(keys.command('list').description('list the API keys, revoked ones included (never the secret)')).action(async (options, command) => {
    const list = await workspaceClient(command).apiKeys.list();
    if (options.json) return printJson(list);
    say(keysTable(list));
  });
  withJson(keys.command('revoke <id>').description('revoke an API key (doing it again succeeds too)')).action(async (id: string, options, command) => {
    await workspaceClient(command).apiKeys.revoke(id);
    if (options.json) return printJson({ id, revoked: true });
    say(`Revoked API key ${id}.`);
  });
  return keys;
}
