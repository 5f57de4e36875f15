import { Command, Option } from '@commander-js/extra-typings';
import type { Workspace } from 'wum/sdk';
import { adminClient, globalOptions, positiveInteger, withJson } from './context.ts';
import { details, printJson, say, table } from './output.ts';
import { keysCommand } from './admin-keys.ts';
import { webhooksCommand } from './admin-webhooks.ts';
import { idpCommand } from './admin-idp.ts';
import { auditStreamsCommand } from './audit-streams.ts';

/** A hint for the new workspace's address, when the operator API runs on `localhost`. */
function workspaceUrl(adminUrl: string, subdomain: string): string | undefined {
  const url = new URL(adminUrl);
  if (url.hostname !== 'localhost' && !url.hostname.endsWith('.localhost')) return undefined;
  url.hostname = `${subdomain}.localhost`;
  return url.origin;
}

/** `wum admin …`: workspaces, their API keys and webhook endpoints, audit streams, the product catalogue, the secrets key (--admin-url, --admin-token). */
export function adminCommand(): Command {
  const admin = new Command('admin').description('operator commands (--admin-url, --admin-token)');

  const workspaces = admin.command('workspaces').description('create, list and delete workspaces');
  withJson(
    workspaces
      .command('create <subdomain>')
      .description('create a workspace and its first API key (shown only this once)')
      .option('--name <name>', 'display name (default: the subdomain)'),
  ).action(async (subdomain: string, options, command) => {
    const client = adminClient(command);
    const created = await client.workspaces.create({ subdomain, ...(options.name ? { name: options.name } : {}) });
    if (options.json) return printJson(created);
    const globals = globalOptions(command);
    const url = workspaceUrl((globals.adminUrl ?? globals.url)!, created.subdomain);
    say(`Created workspace ${created.subdomain} (${created.name}). Its API key is shown only this once:`);
    say('');
    say(`  export WUM_API_KEY=${created.api_key.key}`);
    if (url) say(`  export WUM_URL=${url}`);
  });
  withJson(
    workspaces
      .command('list')
      .description('list workspaces, oldest first (one page, or --all)')
      .addOption(new Option('--page <n>', 'page number, from 1').argParser(positiveInteger).conflicts('all'))
      .addOption(new Option('--page-size <n>', 'workspaces per page, 1-100 (default 30)').argParser(positiveInteger))
      .option('--all', 'every page'),
  ).action(async (options, command) => {
    const client = adminClient(command);
    const rows = (list: readonly Workspace[]) => list.map((w) => [w.subdomain, w.name, w.created_at]);
    if (options.all) {
      const all: Workspace[] = [];
      for await (const w of client.workspaces.iterate({ page_size: options.pageSize ?? 100 })) all.push(w);
      if (options.json) return printJson(all);
      if (all.length > 0) say(table(['subdomain', 'name', 'created_at'], rows(all)));
      return say(`${all.length} workspaces.`);
    }
    const page = await client.workspaces.list({ page_number: options.page, page_size: options.pageSize });
    if (options.json) return printJson(page);
    if (page.workspaces.length > 0) say(table(['subdomain', 'name', 'created_at'], rows(page.workspaces)));
    say(`Page ${page.pagination.current_page_number} of ${page.pagination.total_pages}, ${page.pagination.total_records} workspaces.`);
  });
  withJson(
    workspaces.command('delete <subdomain>').description('delete a workspace with all its users, keys and audit trail'),
  ).action(async (subdomain: string, options, command) => {
    await adminClient(command).workspaces.delete(subdomain);
    if (options.json) return printJson({ subdomain, deleted: true });
    say(`Deleted workspace ${subdomain}.`);
  });

  admin.addCommand(keysCommand());
  admin.addCommand(idpCommand());

  const products = admin.command('products').description('manage the product catalogue');
  withJson(
    products
      .command('put <name>')
      .description('create a product, or replace its roles')
      .addOption(
        new Option('--role <role>', 'a role, in display order (repeat for several)')
          .argParser((value: string, previous: string[] = []) => [...previous, value])
          .makeOptionMandatory(),
      ),
  ).action(async (name: string, options, command) => {
    const { product, created } = await adminClient(command).products.put(name, options.role);
    if (options.json) return printJson(product);
    say(`${created ? 'Created' : 'Updated'} product ${product.name}.`);
    say(details({ name: product.name, roles: product.roles.join(', '), created_at: product.created_at, updated_at: product.updated_at }));
  });
  withJson(products.command('list').description('list the catalogue')).action(async (options, command) => {
    const list = await adminClient(command).products.list();
    if (options.json) return printJson(list);
    say(table(['name', 'roles', 'updated_at'], list.map((p) => [p.name, p.roles.join(', '), p.updated_at])));
  });
  withJson(products.command('delete <name>').description('remove a product (refused while an active user holds it)')).action(
    async (name: string, options, command) => {
      await adminClient(command).products.delete(name);
      if (options.json) return printJson({ name, deleted: true });
      say(`Deleted product ${name}.`);
    },
  );

  admin.addCommand(webhooksCommand());
  admin.addCommand(auditStreamsCommand('audit-streams', 'operator'));

  withJson(
    admin
      .command('rotate-secrets-key')
      .description('re-encrypt every stored secret with the server\'s SECRETS_KEY (the old key in SECRETS_KEY_PREVIOUS); safe to repeat'),
  ).action(async (options, command) => {
    const rotation = await adminClient(command).rotateSecretsKey();
    if (options.json) printJson(rotation);
    else say(`Re-encrypted ${rotation.reencrypted} secrets with key ${rotation.key_id}.`);
    if (rotation.undecryptable > 0) {
      // Removing the old key now would lose these secrets: say so, and fail the command.
      process.stderr.write(`${rotation.undecryptable} secrets could not be decrypted with SECRETS_KEY or SECRETS_KEY_PREVIOUS; keep the key they were written with.\n`);
      process.exitCode = 1;
    } else if (!options.json) say('Every stored secret is encrypted with it: SECRETS_KEY_PREVIOUS is no longer needed.');
  });
  return admin;
}
