import { Command } from '@commander-js/extra-typings';
import { withJson, workspaceClient } from './context.ts';
import { printJson, say, table } from './output.ts';

/** `wum products list`: the products users of the workspace can hold roles in. */
export function productsCommand(): Command {
  const products = new Command('products').description('the products available to a workspace (--url, --api-key)');
  withJson(products.command('list').description('list products and their roles')).action(async (options, command) => {
    const list = await workspaceClient(command).products.list();
    if (options.json) return printJson(list);
    say(table(['name', 'roles'], list.map((p) => [p.name, p.roles.join(', ')])));
  });
  return products;
}
