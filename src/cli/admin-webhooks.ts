import { Command, InvalidArgumentError, Option } from '@commander-js/extra-typings';
import { EVENT_TYPES, type EventType, type WebhookDelivery, type WebhookEndpoint, type WebhookEndpointChanges, type WebhookEndpointWithSecret } from 'wum/sdk';
import { adminClient, positiveInteger, withJson } from './context.ts';
import { details, printJson, say, table } from './output.ts';

/** Whether `value` is one of the SDK's {@link EVENT_TYPES} (the API's own list, `audit_stream.paused` included). */
const isEventType = (value: string): value is EventType => (EVENT_TYPES as readonly string[]).includes(value);

/** `--event-type`, repeatable. */
const eventTypeOption = () =>
  new Option('--event-type <type>', `send only this event type (repeat for several; default: every type): ${EVENT_TYPES.join(', ')}`).argParser(
    (value: string, previous: EventType[] = []) => {
      if (!isEventType(value)) throw new InvalidArgumentError(`Allowed choices are ${EVENT_TYPES.join(', ')}.`);
      return [...previous, value];
    },
  );

/** An endpoint as a two-column table. */
function endpointDetails(e: WebhookEndpoint): string {
  return details({
    id: e.id,
    url: e.url,
    description: e.description || '(none)',
    event_types: e.event_types?.join(', ') ?? '(all)',
    enabled: e.enabled ? 'yes' : `no (${e.disabled_reason ?? ''})`,
    previous_secret_expires_at: e.previous_secret_expires_at ?? '',
    created_at: e.created_at,
    updated_at: e.updated_at,
  });
}

/** Prints an endpoint with its secret, which is shown only this once. */
function printWithSecret(verb: string, e: WebhookEndpointWithSecret, json: boolean | undefined): void {
  if (json) return printJson(e);
  say(`${verb} webhook endpoint ${e.id}. Its signing secret is shown only this once:`);
  say('');
  say(`  ${e.secret}`);
  say('');
  say(endpointDetails(e));
}

/** One row per delivery: id, event, status, attempts, last response. */
function deliveriesTable(list: readonly WebhookDelivery[]): string {
  return table(
    ['id', 'event_id', 'type', 'status', 'attempts', 'last_status', 'last_attempt_at'],
    list.map((d) => [d.id, d.event_id, d.event_type, d.status, d.attempts, d.last_response_status ?? d.attempt_log.at(-1)?.error ?? '', d.last_attempt_at ?? '']),
  );
}

/** `wum admin webhooks …`: a workspace's webhook endpoints and their deliveries. */
export function webhooksCommand(): Command {
  const webhooks = new Command('webhooks').description("manage a workspace's webhook endpoints and their deliveries");

  withJson(
    webhooks
      .command('create <subdomain> <url>')
      .description('create an endpoint (its signing secret is shown only this once)')
      .option('--description <text>', 'a note for people')
      .addOption(eventTypeOption()),
  ).action(async (subdomain: string, url: string, options, command) => {
    const created = await adminClient(command).webhooks.create(subdomain, {
      url,
      ...(options.description === undefined ? {} : { description: options.description }),
      ...(options.eventType === undefined ? {} : { event_types: options.eventType }),
    });
    printWithSecret('Created', created, options.json);
  });

  withJson(webhooks.command('list <subdomain>').description('list endpoints (never their secrets)')).action(
    async (subdomain: string, options, command) => {
      const list = await adminClient(command).webhooks.list(subdomain);
      if (options.json) return printJson(list);
      say(
        table(
          ['id', 'url', 'event_types', 'enabled'],
          list.map((e) => [e.id, e.url, e.event_types?.join(',') ?? '(all)', e.enabled ? 'yes' : `no (${e.disabled_reason ?? ''})`]),
        ),
      );
    },
  );

  withJson(webhooks.command('get <subdomain> <id>').description('show an endpoint')).action(
    async (subdomain: string, id: string, options, command) => {
      const endpoint = await adminClient(command).webhooks.get(subdomain, id);
      if (options.json) return printJson(endpoint);
      say(endpointDetails(endpoint));
    },
  );

  withJson(
    webhooks
      .command('update <subdomain> <id>')
      .description('change an endpoint (--enable also resumes one the service disabled)')
      .option('--url <url>', 'new URL')
      .option('--description <text>', 'new note')
      .addOption(eventTypeOption())
      .addOption(new Option('--all-event-types', 'send every event type').conflicts('eventType'))
      .addOption(new Option('--enable', 'resume deliveries').conflicts('disable'))
      .option('--disable', 'stop deliveries'),
  ).action(async (subdomain: string, id: string, options, command) => {
    const changes: WebhookEndpointChanges = {
      ...(options.url === undefined ? {} : { url: options.url }),
      ...(options.description === undefined ? {} : { description: options.description }),
      ...(options.eventType === undefined ? {} : { event_types: options.eventType }),
      ...(options.allEventTypes ? { event_types: null } : {}),
      ...(options.enable ? { enabled: true } : {}),
      ...(options.disable ? { enabled: false } : {}),
    };
    const endpoint = await adminClient(command).webhooks.update(subdomain, id, changes);
    if (options.json) return printJson(endpoint);
    say(`Updated webhook endpoint ${endpoint.id}.`);
    say(endpointDetails(endpoint));
  });

  withJson(webhooks.command('delete <subdomain> <id>').description('delete an endpoint and its deliveries')).action(
    async (subdomain: string, id: string, options, command) => {
      await adminClient(command).webhooks.delete(subdomain, id);
      if (options.json) return printJson({ subdomain, id, deleted: true });
      say(`Deleted webhook endpoint ${id}.`);
    },
  );

  withJson(
    webhooks.command('rotate-secret <subdomain> <id>').description('give an endpoint a new secret (the old one still signs for 24 h)'),
  ).action(async (subdomain: string, id: string, options, command) => {
    printWithSecret('Rotated the secret of', await adminClient(command).webhooks.rotateSecret(subdomain, id), options.json);
  });

  withJson(
    webhooks
      .command('deliveries <subdomain> <id>')
      .description("list an endpoint's deliveries, newest first")
      .addOption(new Option('--page <n>', 'page number, from 1').argParser(positiveInteger))
      .addOption(new Option('--page-size <n>', 'deliveries per page, 1-100 (default 30)').argParser(positiveInteger)),
  ).action(async (subdomain: string, id: string, options, command) => {
    const page = await adminClient(command).webhooks.deliveries(subdomain, id, {
      ...(options.page === undefined ? {} : { page_number: options.page }),
      ...(options.pageSize === undefined ? {} : { page_size: options.pageSize }),
    });
    if (options.json) return printJson(page);
    if (page.deliveries.length > 0) say(deliveriesTable(page.deliveries));
    say(`Page ${page.pagination.current_page_number} of ${page.pagination.total_pages}, ${page.pagination.total_records} deliveries.`);
  });

  withJson(webhooks.command('redeliver <subdomain> <id> <delivery-id>').description('send a delivery again (same webhook-id)')).action(
    async (subdomain: string, id: string, deliveryId: string, options, command) => {
      const delivery = await adminClient(command).webhooks.redeliver(subdomain, id, deliveryId);
      if (options.json) return printJson(delivery);
      say(`Delivery ${delivery.id} (event ${delivery.event_id}) will be sent again.`);
    },
  );

  return webhooks;
}
