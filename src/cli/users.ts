import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Command, InvalidArgumentError, Option, type OptionValues } from '@commander-js/extra-typings';
import { stringify } from 'csv-stringify';
import type { AppRole, ListUsersQuery, StatusFilter, User, UserChanges } from 'wum/sdk';
import { positiveInteger, withJson, workspaceClient } from './context.ts';
import { printJson, say, table, userDetails, usersTable, wasReactivated } from './output.ts';
import { CSV_COLUMNS, parseApps, RowError, userToRecord } from '../../sdk/users-csv.ts';
import { checkImportFile, importFile, summarize } from './users-import.ts';

const STATUSES: StatusFilter[] = ['active', 'deactivated', 'all'];
const SORTS = ['created_at', '-created_at', 'email', '-email', 'expires_at', '-expires_at'];

/** Units of `--expires-in`, in ms. */
const EXPIRY_UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** Parses `--expires-at` (an RFC 3339 instant) into the ISO form the API takes. */
function expiresAt(value: string): string {
  const at = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(value) || Number.isNaN(at.getTime())) {
    throw new InvalidArgumentError('an RFC 3339 instant such as 2026-06-30T17:00:00Z.');
  }
  return at.toISOString();
}

/** Parses `--expires-in` (`90d`, `12h`, `2w`, `30m`) into the instant that far from now. */
function expiresIn(value: string): string {
  const match = /^(\d+)([mhdw])$/.exec(value);
  if (!match || Number(match[1]) <= 0) throw new InvalidArgumentError('a positive number and a unit: m, h, d or w (e.g. 90d).');
  return new Date(Date.now() + Number(match[1]) * EXPIRY_UNITS[match[2]!]!).toISOString();
}

/** The options that set when a membership ends (docs/contract.md Part B, "Access that ends on time"). */
function withExpiry<Args extends unknown[], Opts extends OptionValues, Globals extends OptionValues>(command: Command<Args, Opts, Globals>) {
  return command
    .addOption(new Option('--expires-at <instant>', 'the membership ends then (RFC 3339), deactivating the user').argParser(expiresAt))
    .addOption(new Option('--expires-in <duration>', 'the membership ends this long from now: 90d, 12h, 2w, 30m').argParser(expiresIn).conflicts('expiresAt'));
}

/** The `expires_at` of the expiry options, when one was given. */
function expiryOf(options: { expiresAt?: string; expiresIn?: string }): { expires_at?: string } {
  const at = options.expiresAt ?? options.expiresIn;
  return at === undefined ? {} : { expires_at: at };
}

/** The filter options shared by `list` and `export` (docs/contract.md Part B, Finding users). */
function withFilters<Args extends unknown[], Opts extends OptionValues, Globals extends OptionValues>(command: Command<Args, Opts, Globals>) {
  return command
    .addOption(new Option('--status <status>', 'which users').choices(STATUSES).default('active'))
    .option('--q <text>', 'users whose email, first or last name starts with this text (ignoring case)')
    .addOption(new Option('--role <role>', 'only this workspace role').choices(['owner', 'non_owner']))
    .option('--app <product[:role]>', 'only holders of a role in this product (crm) or of this role (crm:admin)')
    .addOption(new Option('--sort <order>', 'order; - reverses').choices(SORTS).default('created_at'));
}

/** The query of the filter options. */
function filtersOf(options: { status: StatusFilter; q?: string; role?: 'owner' | 'non_owner'; app?: string; sort: string }): ListUsersQuery {
  return {
    status: options.status,
    sort: options.sort as ListUsersQuery['sort'],
    ...(options.q === undefined ? {} : { q: options.q }),
    ...(options.role === undefined ? {} : { role: options.role }),
    ...(options.app === undefined ? {} : { app: options.app }),
  };
}

/** `--app crm:admin`, repeatable: collects `{ name, role }`. */
function collectApp(value: string, previous: AppRole[] = []): AppRole[] {
  try {
    const apps = parseApps(value);
    if (apps.length !== 1) throw new RowError('invalid_apps', 'give one <product>:<role> per --app');
    return [...previous, ...apps];
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

/** `wum users …`: add, update, remove, get, list, history, import and export the users of a workspace. */
export function usersCommand(): Command {
  const users = new Command('users').description("manage a workspace's users (--url, --api-key)");

  withJson(
    withExpiry(users
      .command('add <email>')
      .description('add a user, or reactivate a deactivated one')
      .addOption(new Option('--role <role>', 'workspace role').choices(['owner', 'non_owner']).makeOptionMandatory())
      .option('--app <product:role>', 'a product role, e.g. crm:admin (repeat for several)', collectApp)
      .option('--first-name <name>', 'first name (default "-"; kept on reactivation when omitted)')
      .option('--last-name <name>', 'last name (default "-"; kept on reactivation when omitted)')),
  ).action(async (email: string, options, command) => {
    const user = await workspaceClient(command).users.add({
      email,
      role: options.role,
      apps: options.app ?? [],
      ...(options.firstName !== undefined ? { first_name: options.firstName } : {}),
      ...(options.lastName !== undefined ? { last_name: options.lastName } : {}),
      ...expiryOf(options),
    });
    if (options.json) return printJson(user);
    say(`${wasReactivated(user) ? 'Reactivated' : 'Added'} ${user.email}.`);
    say(userDetails(user));
  });

  withJson(
    withExpiry(users
      .command('update <email>')
      .description('change a user in place: only the options given change (--app replaces all product roles)')
      .addOption(new Option('--role <role>', 'workspace role').choices(['owner', 'non_owner']))
      .option('--app <product:role>', 'a product role, e.g. crm:admin (repeat for several); replaces the whole set', collectApp)
      .addOption(new Option('--clear-apps', 'remove every product role').conflicts('app'))
      .option('--first-name <name>', 'first name ("-" for none)')
      .option('--last-name <name>', 'last name ("-" for none)')
      .option('--email <email>', 'a new email (rename)')
      .addOption(new Option('--status <status>', 'deactivate or reactivate').choices(['active', 'deactivated']))
      .option('--if-match <etag>', 'change only if the user still has this ETag (from `users get --json`)')
      .addOption(new Option('--no-expiry', 'the membership never ends (clears expires_at)').conflicts(['expiresAt', 'expiresIn']))),
  ).action(async (email: string, options, command) => {
    const changes: UserChanges = {
      ...(options.role === undefined ? {} : { role: options.role }),
      ...(options.app === undefined ? {} : { apps: options.app }),
      ...(options.clearApps ? { apps: [] } : {}),
      ...(options.firstName === undefined ? {} : { first_name: options.firstName }),
      ...(options.lastName === undefined ? {} : { last_name: options.lastName }),
      ...(options.email === undefined ? {} : { email: options.email }),
      ...(options.status === undefined ? {} : { status: options.status }),
      ...expiryOf(options),
      ...(options.expiry === false ? { expires_at: null } : {}),
    };
    const user = await workspaceClient(command).users.update(email, changes, options.ifMatch ? { ifMatch: options.ifMatch } : {});
    if (options.json) return printJson(user);
    say(`Updated ${user.email}.`);
    say(userDetails(user));
  });

  withJson(users.command('remove <email>').description('deactivate a user (doing it again succeeds too)')).action(
    async (email: string, options, command) => {
      await workspaceClient(command).users.remove(email);
      if (options.json) return printJson({ email, status: 'deactivated' });
      say(`Deactivated ${email}.`);
    },
  );

  withJson(users.command('get <email>').description('show one user, of any status')).action(
    async (email: string, options, command) => {
      const user = await workspaceClient(command).users.get(email);
      if (options.json) return printJson({ ...user, etag: user.etag });
      say(userDetails(user));
      say(`ETag: ${user.etag} (for update --if-match)`);
    },
  );

  withJson(
    withFilters(users.command('list').description('list or find users, oldest first unless --sort (one page, or --all)'))
      .addOption(new Option('--page <n>', 'page number, from 1').argParser(positiveInteger).conflicts('all'))
      .addOption(new Option('--page-size <n>', 'users per page, 1-100 (default 30)').argParser(positiveInteger))
      .option('--all', 'every page'),
  ).action(async (options, command) => {
    const client = workspaceClient(command);
    const filters = filtersOf(options);
    if (options.all) {
      const all: User[] = [];
      for await (const user of client.users.iterate({ ...filters, page_size: options.pageSize ?? 100 })) {
        all.push(user);
      }
      if (options.json) return printJson(all);
      if (all.length > 0) say(usersTable(all));
      return say(`${all.length} ${options.status === 'all' ? '' : `${options.status} `}users.`);
    }
    const page = await client.users.list({ ...filters, page_number: options.page, page_size: options.pageSize });
    if (options.json) return printJson(page);
    const { current_page_number: current, total_pages: pages, total_records: total } = page.pagination;
    const what = `${options.status === 'all' ? '' : `${options.status} `}users`;
    if (page.users.length > 0) say(usersTable(page.users));
    say(total === 0 ? `No ${what}.` : `Page ${current} of ${pages}, ${total} ${what}.`);
  });

  withJson(
    users
      .command('history <email>')
      .description("a user's audit history: its changes, who made them and when (newest first)")
      .addOption(new Option('--page <n>', 'page number, from 1').argParser(positiveInteger))
      .addOption(new Option('--page-size <n>', 'events per page, 1-100 (default 30)').argParser(positiveInteger)),
  ).action(async (email: string, options, command) => {
    const page = await workspaceClient(command).users.history(email, {
      sort: '-occurred_at',
      ...(options.page === undefined ? {} : { page_number: options.page }),
      ...(options.pageSize === undefined ? {} : { page_size: options.pageSize }),
    });
    if (options.json) return printJson(page);
    const rows = page.audit_events.map((e) => [String(e.occurred_at), e.action, e.actor_type, e.request_id ?? '', changedFields(e.before, e.after)]);
    if (rows.length > 0) say(table(['time', 'action', 'actor', 'request id', 'changed'], rows));
    say(`Page ${page.pagination.current_page_number} of ${page.pagination.total_pages}, ${page.pagination.total_records} events.`);
  });

  withJson(
    users
      .command('import <file>')
      .description(
        'add the users of a CSV file (columns email,role,first_name,last_name,apps,expires_at; apps as crm:admin;analytics:viewer; expires_at RFC 3339 or empty), ' +
          'or of a JSON Lines file (.jsonl/.ndjson, one POST /users body per line), through an import job of the server: ' +
          'rows already active are skipped, so a re-run resumes. Exit code 0 only when the job completes and no row is rejected.',
      )
      .addOption(new Option('--concurrency <n>', 'ignored: the server imports the rows in batches').argParser(positiveInteger).hideHelp()),
  ).action(async (file: string, options, command) => {
    checkImportFile(file);
    const client = workspaceClient(command);
    const { job, reports } = await importFile(client, file);
    const summary = summarize(reports);
    if (options.json) printJson({ summary, rows: reports, job });
    else {
      const notable = reports.filter((r) => r.outcome !== 'added');
      if (notable.length > 0) {
        say(table(['line', 'email', 'result', 'code', 'detail'], notable.map((r) => [r.line, r.email, r.outcome, r.code ?? '', r.detail ?? ''])));
      }
      say(
        `${summary.rows} rows: ${summary.added} added, ${summary.reactivated} reactivated, ` +
          `${summary.skipped} skipped (already active), ${summary.rejected} rejected` +
          (summary.not_attempted ? `, ${summary.not_attempted} not attempted` : '') +
          '.',
      );
      if (job.status !== 'completed') say(`The import ${job.id} ${job.status}${job.error ? `: ${job.error}` : ''}.`);
    }
    if (job.status !== 'completed' || summary.rejected > 0 || summary.not_attempted > 0) process.exitCode = 1;
  });

  withFilters(users.command('export').description('write the users (or those the filters find) as CSV (the columns import reads) or JSON, to stdout'))
    .addOption(new Option('--format <format>', 'output format').choices(['csv', 'json']).default('csv'))
    .option('--json', 'the same as --format json')
    .action(async (options, command) => {
      const found = workspaceClient(command).users.iterate(filtersOf(options));
      if (options.json || options.format === 'json') {
        await pipeline(Readable.from(jsonArray(found)), process.stdout);
      } else {
        const records = Readable.from(
          (async function* () {
            for await (const user of found) yield userToRecord(user);
          })(),
        );
        await pipeline(records, stringify({ header: true, columns: [...CSV_COLUMNS] }), process.stdout);
      }
    });

  return users;
}

/** The user fields an audit event can change, in the order the API shows them. */
const USER_FIELDS = ['email', 'role', 'first_name', 'last_name', 'apps', 'status'];

/** The fields an audit event changed, e.g. `role, apps` (all of them for a creation). */
function changedFields(before: unknown, after: unknown): string {
  const b = (before ?? {}) as Record<string, unknown>;
  const a = (after ?? {}) as Record<string, unknown>;
  return USER_FIELDS.filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k])).join(', ');
}

/** Streams users as one JSON array, one user per line. */
async function* jsonArray(users: AsyncIterable<User>): AsyncGenerator<string> {
  let first = true;
  for await (const user of users) {
    yield `${first ? '[\n' : ',\n'}  ${JSON.stringify(user)}`;
    first = false;
  }
  yield first ? '[]\n' : '\n]\n';
}
