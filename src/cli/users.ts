import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Command, InvalidArgumentError, Option } from 'commander';
import { stringify } from 'csv-stringify';
import type { AppRole, StatusFilter, User } from 'wum/sdk';
import { positiveInteger, withJson, workspaceClient } from './context.ts';
import { printJson, say, table, userDetails, usersTable, wasReactivated } from './output.ts';
import { CSV_COLUMNS, parseApps, RowError, userToRecord } from './users-csv.ts';
import { importRows, progressBar, readImportFile, summarize } from './users-import.ts';

const STATUSES: StatusFilter[] = ['active', 'deactivated', 'all'];

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

/** `wum users …`: add, remove, get, list, import and export the users of a workspace. */
export function usersCommand(): Command {
  const users = new Command('users').description("manage a workspace's users (--url, --api-key)");

  withJson(
    users
      .command('add <email>')
      .description('add a user, or reactivate a deactivated one')
      .addOption(new Option('--role <role>', 'workspace role').choices(['owner', 'non_owner']).makeOptionMandatory())
      .option('--app <product:role>', 'a product role, e.g. crm:admin (repeat for several)', collectApp)
      .option('--first-name <name>', 'first name (default "-"; kept on reactivation when omitted)')
      .option('--last-name <name>', 'last name (default "-"; kept on reactivation when omitted)'),
  ).action(async (email: string, options, command: Command) => {
    const user = await workspaceClient(command).users.add({
      email,
      role: options.role,
      apps: options.app ?? [],
      ...(options.firstName !== undefined ? { first_name: options.firstName } : {}),
      ...(options.lastName !== undefined ? { last_name: options.lastName } : {}),
    });
    if (options.json) return printJson(user);
    say(`${wasReactivated(user) ? 'Reactivated' : 'Added'} ${user.email}.`);
    say(userDetails(user));
  });

  withJson(users.command('remove <email>').description('deactivate a user (doing it again succeeds too)')).action(
    async (email: string, options, command: Command) => {
      await workspaceClient(command).users.remove(email);
      if (options.json) return printJson({ email, status: 'deactivated' });
      say(`Deactivated ${email}.`);
    },
  );

  withJson(users.command('get <email>').description('show one user, of any status')).action(
    async (email: string, options, command: Command) => {
      const user = await workspaceClient(command).users.get(email);
      if (options.json) return printJson(user);
      say(userDetails(user));
    },
  );

  withJson(
    users
      .command('list')
      .description('list users, oldest first (one page, or --all)')
      .addOption(new Option('--status <status>', 'which users').choices(STATUSES).default('active'))
      .addOption(new Option('--page <n>', 'page number, from 1').argParser(positiveInteger).conflicts('all'))
      .addOption(new Option('--page-size <n>', 'users per page, 1-100 (default 30)').argParser(positiveInteger))
      .option('--all', 'every page'),
  ).action(async (options, command: Command) => {
    const client = workspaceClient(command);
    if (options.all) {
      const all: User[] = [];
      for await (const user of client.users.iterate({ status: options.status, page_size: options.pageSize ?? 100 })) {
        all.push(user);
      }
      if (options.json) return printJson(all);
      if (all.length > 0) say(usersTable(all));
      return say(`${all.length} ${options.status === 'all' ? '' : `${options.status} `}users.`);
    }
    const page = await client.users.list({ status: options.status, page_number: options.page, page_size: options.pageSize });
    if (options.json) return printJson(page);
    const { current_page_number: current, total_pages: pages, total_records: total } = page.pagination;
    const what = `${options.status === 'all' ? '' : `${options.status} `}users`;
    if (page.users.length > 0) say(usersTable(page.users));
    say(total === 0 ? `No ${what}.` : `Page ${current} of ${pages}, ${total} ${what}.`);
  });

  withJson(
    users
      .command('import <file>')
      .description(
        'add the users of a CSV file (columns email,role,first_name,last_name,apps; apps as crm:admin;analytics:viewer); ' +
          'rows already active are skipped, so a re-run resumes. Exit code 0 only when no row is rejected.',
      )
      .addOption(new Option('--concurrency <n>', 'rows sent at once').argParser(positiveInteger).default(8)),
  ).action(async (file: string, options, command: Command) => {
    const rows = readImportFile(file);
    const client = workspaceClient(command);
    const progress = progressBar(rows.length);
    const reports = await importRows(client, rows, { concurrency: Math.min(options.concurrency, 64), onRow: progress.tick }).finally(
      progress.stop,
    );
    const summary = summarize(reports);
    if (options.json) printJson({ summary, rows: reports });
    else {
      if (reports.length > 0) {
        say(table(['line', 'email', 'result', 'code', 'detail'], reports.map((r) => [r.line, r.email, r.outcome, r.code ?? '', r.detail ?? ''])));
      }
      say(
        `${summary.rows} rows: ${summary.added} added, ${summary.reactivated} reactivated, ` +
          `${summary.skipped} skipped (already active), ${summary.rejected} rejected` +
          (summary.not_attempted ? `, ${summary.not_attempted} not attempted` : '') +
          '.',
      );
    }
    if (summary.rejected > 0 || summary.not_attempted > 0) process.exitCode = 1;
  });

  users
    .command('export')
    .description('write the users as CSV (the columns import reads) or JSON, to stdout')
    .addOption(new Option('--status <status>', 'which users').choices(STATUSES).default('active'))
    .addOption(new Option('--format <format>', 'output format').choices(['csv', 'json']).default('csv'))
    .option('--json', 'the same as --format json')
    .action(async (options, command: Command) => {
      const found = workspaceClient(command).users.iterate({ status: options.status });
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

/** Streams users as one JSON array, one user per line. */
async function* jsonArray(users: AsyncIterable<User>): AsyncGenerator<string> {
  let first = true;
  for await (const user of users) {
    yield `${first ? '[\n' : ',\n'}  ${JSON.stringify(user)}`;
    first = false;
  }
  yield first ? '[]\n' : '\n]\n';
}
