import { Command, Option } from '@commander-js/extra-typings';
import type { IdentityProvider } from 'wum/sdk';
import { adminClient, withJson } from './context.ts';
import { details, printJson, say } from './output.ts';

/** The configuration as rows, never the secret (the API does not return it). */
const rows = (p: IdentityProvider): Record<string, string> => ({
  issuer: p.issuer,
  client_id: p.client_id,
  client_secret: '(set, never shown)',
  redirect_path: p.redirect_path,
  revision: p.revision,
  updated_at: String(p.updated_at),
});

/**
 * `wum admin idp set|show|remove <subdomain>`: the OpenID Connect identity provider a
 * workspace's owners sign in to the console with (docs/console.md, "Signing in").
 */
export function idpCommand(): Command {
  const idp = new Command('idp').description("a workspace's identity provider for the console sign-in (operator)");
  withJson(
    idp
      .command('set <subdomain>')
      .description('set or replace it (ends the sessions opened with the previous one)')
      .requiredOption('--issuer <url>', 'the OpenID Provider\'s issuer URL')
      .requiredOption('--client-id <id>', 'the client id registered at the provider')
      .addOption(
        new Option('--client-secret <secret>', 'the client secret (prefer the environment variable, kept out of shell history)')
          .env('WUM_IDP_CLIENT_SECRET')
          .makeOptionMandatory(),
      ),
  ).action(async (subdomain: string, options, command) => {
    const { provider, created } = await adminClient(command).identityProviders.set(subdomain, {
      issuer: options.issuer,
      client_id: options.clientId,
      client_secret: options.clientSecret,
    });
    if (options.json) return printJson(provider);
    say(`${created ? 'Set' : 'Replaced'} the identity provider of ${subdomain}.`);
    say(details(rows(provider)));
  });
  withJson(idp.command('show <subdomain>').description('show it (never the secret)')).action(async (subdomain: string, options, command) => {
    const provider = await adminClient(command).identityProviders.get(subdomain);
    if (options.json) return printJson(provider);
    say(details(rows(provider)));
  });
  withJson(idp.command('remove <subdomain>').description('remove it (its people\'s sessions end; the key sign-in comes back)')).action(
    async (subdomain: string, options, command) => {
      await adminClient(command).identityProviders.remove(subdomain);
      if (options.json) return printJson({ subdomain, removed: true });
      say(`Removed the identity provider of ${subdomain}.`);
    },
  );
  return idp;
}
