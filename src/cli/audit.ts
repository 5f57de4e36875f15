import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { Command, Option, type OptionValues } from '@commander-js/extra-typings';
import type { OwnAuditEvent, OwnAuditQuery } from 'wum/sdk';
import { auditStreamsCommand } from './audit-streams.ts';
import { instant, positiveInteger, withJson, workspaceClient } from './context.ts';
import { printJson, say, table } from './output.ts';

/** An `actor_type` the audit listing filters by. */
type ActorType = NonNullable<OwnAuditQuery['actor_type']>;

/** The kinds of actor the audit trail names (docs/api.md, "Audit trail"), held to the API's list by the compiler both ways. */
const ACTOR_TYPES = ['person', 'api_key', 'scim', 'operator', 'system', 'policy'] as const satisfies readonly ActorType[];
const everyActorType: [Exclude<ActorType, (typeof ACTOR_TYPES)[number]>] extends [never] ? true : never = true;
void everyActorType;

/** The filters every audit command takes. */
interface FilterOptions {
  action?: string;
  actorType?: ActorType;
  targetId?: string;
  since?: string;
  until?: string;
}

/** The query fields of the filters given. */
function filterQuery(options: FilterOptions) {
  return {
    ...(options.action ? { action: options.action } : {}),
    ...(options.actorType ? { actor_type: options.actorType } : {}),
    ...(options.targetId ? { target_id: options.targetId } : {}),
    ...(options.since ? { since: options.since } : {}),
    ...(options.until ? { until: options.until } : {}),
  };
}

/** Adds the filter options of the audit commands. */
function withFilters<Args extends unknown[], Opts extends OptionValues, Globals extends OptionValues>(command: Command<Args, Opts, Globals>) {
  return command
    .option('--action <action>', 'only events of this action, e.g. user.updated')
    .addOption(new Option('--actor-type <type>', 'only events made by this kind of actor').choices([...ACTOR_TYPES]))
    .option('--target-id <id>', 'only events about this target (an email, key id, ...)')
    .addOption(new Option('--since <instant>', 'only events at or after this RFC 3339 instant').argParser(instant))
    .addOption(new Option('--until <instant>', 'only events before this RFC 3339 instant').argParser(instant));
}

/** One event as a line for people: id, time, action, actor and target. */
function eventRow(e: OwnAuditEvent): string[] {
  return [String(e.id), e.occurred_at, e.action, `${e.actor_type}: ${e.actor.label ?? e.actor_id ?? ''}`, `${e.target_type} ${e.target_id}`];
}

/**
 * `wum audit list|tail|export`: the workspace's audit trail through its API (--url, --api-key;
 * the key needs `audit:read`). `list` shows a page, newest first unless `--oldest-first`;
 * `tail` prints the events from `--since` (or the last `--last`) oldest first and follows new
 * ones by cursor until Ctrl-C; `export` streams JSON Lines or CSV to stdout. Each narrows by
 * action, actor type, target and time. Source: docs/api.md, "Audit trail" and "Exporting the audit trail".
 */
export function auditCommand(): Command {
  const audit = new Command('audit').description("the workspace's audit trail (needs audit:read)");
  withJson(
    withFilters(audit.command('list').description('list audit events, newest first'))
      .option('--oldest-first', 'oldest first instead')
      .addOption(new Option('--page <number>', 'page to show, from 1').argParser(positiveInteger).default(1))
      .addOption(new Option('--page-size <size>', 'events per page, 1-100').argParser(positiveInteger).default(30)),
  ).action(async (options, command) => {
    const query: OwnAuditQuery = {
      page_number: options.page,
      page_size: options.pageSize,
      sort: options.oldestFirst ? 'occurred_at' : '-occurred_at',
      ...filterQuery(options),
    };
    const page = await workspaceClient(command).auditEvents.list(query);
    if (options.json) return printJson(page);
    say(
      table(
        ['occurred_at', 'action', 'actor', 'target'],
        page.audit_events.map((e) => [e.occurred_at, e.action, `${e.actor_type}: ${e.actor.label ?? e.actor_id ?? ''}`, `${e.target_type} ${e.target_id}`]),
      ),
    );
    // Read by page number, as here, a listing always has its pagination.
    if (page.pagination) say(`Page ${page.pagination.current_page_number} of ${page.pagination.total_pages} (${page.total_count} events).`);
  });

  withJson(
    withFilters(audit.command('tail').description('print events oldest first and follow new ones (Ctrl-C stops)'))
      .addOption(new Option('--last <n>', 'without --since: start with the last n events').argParser(positiveInteger).default(10))
      .addOption(new Option('--interval <ms>', 'how often to look for new events when caught up').argParser(positiveInteger).default(1000))
      .option('--no-follow', 'stop once caught up'),
  ).action(async (options, command) => {
    const client = workspaceClient(command);
    const filters = filterQuery(options);
    const stop = new AbortController();
    const onInterrupt = () => stop.abort();
    process.once('SIGINT', onInterrupt);
    const print = (e: OwnAuditEvent) => say(options.json ? JSON.stringify(e) : eventRow(e).join('  '));
    try {
      let cursor = 0;
      if (!options.since) {
        // The last n, printed oldest first; following starts past the newest.
        const newest = await client.auditEvents.list({ ...filters, sort: '-occurred_at', page_size: Math.min(options.last, 100) });
        const shown = newest.audit_events.slice(0, options.last).reverse();
        shown.forEach(print);
        cursor = shown.at(-1)?.id ?? newest.audit_events[0]?.id ?? 0;
      }
      while (!stop.signal.aborted) {
        let seen = 0;
        for await (const event of client.auditEvents.iterate({ ...filters, sort: 'occurred_at', starting_after: cursor })) {
          print(event);
          cursor = event.id;
          seen += 1;
          if (stop.signal.aborted) break;
        }
        if (!options.follow) return;
        if (seen === 0) await sleep(options.interval, undefined, { signal: stop.signal }).catch(() => undefined);
      }
    } finally {
      process.removeListener('SIGINT', onInterrupt);
    }
  });

  withFilters(audit.command('export').description('write the events oldest first to stdout, as JSON Lines or CSV'))
    .addOption(new Option('--format <format>', 'jsonl: one JSON event per line; csv: a header and one row per event').choices(['jsonl', 'csv']).default('jsonl'))
    .action(async (options, command) => {
      const body = await workspaceClient(command).auditEvents.export({ format: options.format, ...filterQuery(options) });
      await pipeline(Readable.fromWeb(body as WebReadableStream<Uint8Array>), process.stdout, { end: false });
    });
  audit.addCommand(auditStreamsCommand('streams', 'workspace'));
  return audit;
}
