import { setTimeout as sleep } from 'node:timers/promises';
import { Command, Option } from '@commander-js/extra-typings';
import type { WumEvent } from 'wum/sdk';
import { nonNegativeInteger, positiveInteger, withJson, workspaceClient } from './context.ts';
import { say } from './output.ts';

/** One event as a line for people: sequence, time, type, and the user's email (an audit stream's event: the stream's name). */
function eventLine(event: WumEvent): string {
  return [event.sequence, event.created_at, event.type, 'user' in event.data ? event.data.user.email : event.data.audit_stream.name].join('  ');
}

/**
 * `wum events tail`: prints the workspace's events in sequence order from `--after` (default:
 * the oldest kept) and then follows the feed, polling every `--interval` ms, until interrupted;
 * `--no-follow` stops once caught up. With `--json`, one event per line (JSON Lines).
 * Source: docs/contract.md Part B, Events and webhooks (the pull feed).
 */
export function eventsCommand(): Command {
  const events = new Command('events').description("the workspace's feed of user changes");
  withJson(
    events
      .command('tail')
      .description('print events in order and follow new ones (Ctrl-C stops)')
      .addOption(new Option('--after <sequence>', 'start after this sequence (0: from the oldest kept)').argParser(nonNegativeInteger).default(0))
      .addOption(new Option('--interval <ms>', 'how often to look for new events when caught up').argParser(positiveInteger).default(1000))
      .option('--no-follow', 'stop once caught up'),
  ).action(async (options, command) => {
    const client = workspaceClient(command);
    let after = options.after;
    for (;;) {
      let seen = 0;
      for await (const event of client.events.iterate({ after })) {
        say(options.json ? JSON.stringify(event) : eventLine(event));
        after = event.sequence;
        seen += 1;
      }
      if (!options.follow) return;
      if (seen === 0) await sleep(options.interval);
    }
  });
  return events;
}
