import { type Command, type CommandUnknownOpts, InvalidArgumentError, Option, type OptionValues } from '@commander-js/extra-typings';
import { createAdminClient, createClient, type RetryOptions, type WumAdminClient, type WumClient } from 'wum/sdk';

/** A mistake in how the command was called (missing configuration, unreadable file): exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Exit codes of `wum` (README, "CLI"). */
export const EXIT = { ok: 0, apiError: 1, usage: 2 } as const;

/** Connection options of every command, from flags or the environment. */
interface GlobalOptions {
  url?: string;
  apiKey?: string;
  adminUrl?: string;
  adminToken?: string;
  connectTo?: string;
}

/** Registers the connection options on the program; subcommands accept them too. */
export function addGlobalOptions(program: CommandUnknownOpts): void {
  program
    .addOption(new Option('--url <url>', 'workspace base URL, e.g. http://acme.localhost:3000').env('WUM_URL'))
    .addOption(new Option('--api-key <key>', "an API key of the workspace").env('WUM_API_KEY'))
    .addOption(
      new Option('--admin-url <url>', 'operator API base URL, e.g. http://localhost:3000 (default: --url)').env('WUM_ADMIN_URL'),
    )
    .addOption(new Option('--admin-token <token>', "the service's ADMIN_TOKEN").env('WUM_ADMIN_TOKEN'))
    .addOption(
      new Option('--connect-to <address>', "send every request to this IP address instead of resolving the URL's host name (the Host header stays the URL's)").env(
        'WUM_CONNECT_TO',
      ),
    );
}

/** Adds `--json` (machine-readable output on stdout) to a command; its options gain `json?: true`. */
export function withJson<Args extends unknown[], Opts extends OptionValues, Globals extends OptionValues>(command: Command<Args, Opts, Globals>) {
  return command.option('--json', 'print JSON instead of a table');
}

/** How long the CLI's calls keep retrying 429 and 503 (a bulk import may meet the rate limit often). */
const CLI_RETRY: RetryOptions = { maxAttempts: 8, maxElapsedMs: 120_000 };

/** Clients are closed when the command ends, so the process exits at once. */
const open: Array<{ close(): Promise<void> }> = [];

/**
 * The connection options of a command. They are the program's, so the subcommand's own types do
 * not know them: each is read as the string commander stores, or absent.
 */
export function globalOptions(command: CommandUnknownOpts): GlobalOptions {
  const all = command.optsWithGlobals();
  const text = (name: keyof GlobalOptions) => (typeof all[name] === 'string' ? all[name] : undefined);
  return { url: text('url'), apiKey: text('apiKey'), adminUrl: text('adminUrl'), adminToken: text('adminToken'), connectTo: text('connectTo') };
}

/** The workspace client of a command, from `--url`/`WUM_URL` and `--api-key`/`WUM_API_KEY`. */
export function workspaceClient(command: CommandUnknownOpts): WumClient {
  const options = globalOptions(command);
  if (!options.url) throw new UsageError('no workspace URL: pass --url or set WUM_URL (e.g. http://acme.localhost:3000)');
  if (!options.apiKey) throw new UsageError('no API key: pass --api-key or set WUM_API_KEY');
  const client = guard(() => createClient({ baseUrl: options.url!, apiKey: options.apiKey!, retry: CLI_RETRY, userAgent: 'wum-cli', ...connection(options) }));
  open.push(client);
  return client;
}

/** The operator client of a command, from `--admin-url` (default `--url`) and `--admin-token`. */
export function adminClient(command: CommandUnknownOpts): WumAdminClient {
  const options = globalOptions(command);
  const baseUrl = options.adminUrl ?? options.url;
  if (!baseUrl) throw new UsageError('no operator API URL: pass --admin-url or set WUM_ADMIN_URL (e.g. http://localhost:3000)');
  if (!options.adminToken) throw new UsageError('no admin token: pass --admin-token or set WUM_ADMIN_TOKEN');
  const client = guard(() => createAdminClient({ baseUrl, adminToken: options.adminToken!, retry: CLI_RETRY, userAgent: 'wum-cli', ...connection(options) }));
  open.push(client);
  return client;
}

/** `connectTo` of the clients, when `--connect-to`/`WUM_CONNECT_TO` gives one. */
function connection(options: GlobalOptions): { connectTo?: string } {
  return options.connectTo ? { connectTo: options.connectTo } : {};
}

/** A client constructor's TypeError (a malformed URL) is a usage error. */
function guard<T>(build: () => T): T {
  try {
    return build();
  } catch (error) {
    if (error instanceof TypeError) throw new UsageError(error.message);
    throw error;
  }
}

/** Closes every client the command opened. */
export async function closeClients(): Promise<void> {
  await Promise.allSettled(open.splice(0).map((c) => c.close()));
}

/** Parses a positive integer option value; anything else is a usage error. */
export function positiveInteger(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new InvalidArgumentError('Not a positive integer.');
  return Number(value);
}

/** Parses a whole number option value (0 or more); anything else is a usage error. */
export function nonNegativeInteger(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('Not a whole number.');
  return Number(value);
}

/** Parses an RFC 3339 instant option (a time zone is required, as the API asks); anything else is a usage error. */
export function instant(value: string): string {
  if (!/^\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)$/.test(value) || Number.isNaN(Date.parse(value))) {
    throw new InvalidArgumentError('Not an RFC 3339 instant such as 2025-01-31T09:00:00Z.');
  }
  return value;
}
