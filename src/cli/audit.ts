import { Command, Option } from 'commander';
import type { OwnAuditQuery } from 'wum/sdk';
import { positiveInteger, withJson, workspaceClient } from './context.ts';
import { printJson, say, table } from './output.ts';

/** An `actor_type` the audit listing filters by. */
type ActorType = NonNullable<OwnAuditQuery['actor_type']>;

/** The kinds of actor the audit trail names (docs/api.md, "Audit trail"), held to the API's list by the compiler both ways. */
const ACTOR_TYPES = ['person', 'api_key', 'scim', 'operator', 'system', 'policy'] as const satisfies readonly ActorType[];
const everyActorType: [Exclude<ActorType, (typeof ACTOR_TYPES)[number]>] extends [never] ? true : never = true;
void everyActorType;

/**
 * `wum audit list`: a page of the workspace's audit trail through its API (--url, --api-key; the
 * key needs `audit:read`), newest first unless `--oldest-first`, narrowed by action, actor type
 * and target. Source: docs/api.md, "Self-service".
 */
export function auditCommand(): Command {
  const audit = new Command('audit').description("the workspace's audit trail (needs audit:read)");
  withJson(
    audit
      .command('list')
      .description('list audit events, newest first')
      .option('--action <action>', 'only events of this action, e.g. user.updated')
      .addOption(new Option('--actor-type <type>', 'only events made by this kind of actor').choices([...ACTOR_TYPES]))
      .option('--target-id <id>', 'only events about this target (an email, key id, ...)')
      .option('--oldest-first', 'oldest first instead')
      .addOption(new Option('--page <number>', 'page to show, from 1').argParser(positiveInteger).default(1))
      .addOption(new Option('--page-size <size>', 'events per page, 1-100').argParser(positiveInteger).default(30)),
  ).action(
    async (
      options: { action?: string; actorType?: string; targetId?: string; oldestFirst?: boolean; page: number; pageSize: number; json?: boolean },
      command: Command,
    ) => {
      const query: OwnAuditQuery = {
        page_number: options.page,
        page_size: options.pageSize,
        sort: options.oldestFirst ? 'occurred_at' : '-occurred_at',
        ...(options.action ? { action: options.action } : {}),
        ...(options.actorType ? { actor_type: options.actorType as ActorType } : {}),
        ...(options.targetId ? { target_id: options.targetId } : {}),
      };
      const page = await workspaceClient(command).auditEvents.list(query);
      if (options.json) return printJson(page);
      say(
        table(
          ['occurred_at', 'action', 'actor', 'target'],
          page.audit_events.map((e) => [e.occurred_at, e.action, `${e.actor_type}: ${e.actor.label ?? e.actor_id ?? ''}`, `${e.target_type} ${e.target_id}`]),
        ),
      );
      const { current_page_number: current, total_pages: pages } = page.pagination;
      say(`Page ${current} of ${pages} (${page.total_count} events).`);
    },
  );
  return audit;
}
