import { readFileSync } from 'node:fs';
import { Command, type CommandUnknownOpts, InvalidArgumentError, Option, type OptionValues } from '@commander-js/extra-typings';
import type { AuditStream, AuditStreamDestination, AuditStreamsApi, AuditStreamWithSecret, NewOperatorAuditStream } from 'wum/sdk';
import { adminClient, instant, positiveInteger, UsageError, withJson, workspaceClient } from './context.ts';
import { details, printJson, say, table } from './output.ts';

/** Which API the commands call: the workspace's own (`wum audit streams`) or the operator's (`wum admin audit-streams`). */
type Side = 'workspace' | 'operator';

/** The stream calls of a command's client, for its side. */
function streamsOf(side: Side, command: CommandUnknownOpts): AuditStreamsApi<NewOperatorAuditStream> {
  return side === 'operator' ? adminClient(command).auditStreams : workspaceClient(command).auditStreams;
}

/** The destination flags of `create`, as commander names them. */
interface DestinationOptions {
  destination?: string;
  httpsUrl?: string;
  splunkUrl?: string;
  splunkToken?: string;
  s3Bucket?: string;
  s3Region?: string;
  s3Endpoint?: string;
  s3Prefix?: string;
  s3AccessKeyId?: string;
  s3SecretAccessKey?: string;
  syslogHost?: string;
  syslogPort?: number;
  syslogCaFile?: string;
}

/** The flags of each destination type; the first names the type. */
const TYPE_FLAGS = {
  https: ['httpsUrl'],
  splunk_hec: ['splunkUrl', 'splunkToken'],
  s3: ['s3Bucket', 's3Region', 's3Endpoint', 's3Prefix', 's3AccessKeyId', 's3SecretAccessKey'],
  syslog: ['syslogHost', 'syslogPort', 'syslogCaFile'],
} as const satisfies Record<AuditStreamDestination['type'], ReadonlyArray<keyof DestinationOptions>>;

/** Credentials that may come from the environment: set there, they do not make their type chosen. */
const FROM_ENVIRONMENT: ReadonlySet<keyof DestinationOptions> = new Set(['splunkToken', 's3SecretAccessKey']);

/** `--kebab-case` of a commander option name, for messages. */
const flag = (name: string) => `--${name.replace(/[A-Z]/g, (m) => `-${m.toLowerCase()}`)}`;

/** The value of a flag a type requires. @throws UsageError naming the flag when it is missing. */
function required(options: DestinationOptions, name: keyof DestinationOptions, type: string): string {
  const value = options[name];
  if (value === undefined || value === '') throw new UsageError(`a ${type} destination needs ${flag(name)}`);
  return String(value);
}

/**
 * The destination the flags describe: `--destination <json>` as the API takes it, or the flags
 * of exactly one type, named by its first flag (docs/api.md, "Audit streams", destinations).
 * @throws UsageError when no type, several types, a missing required flag, a flag of another
 *   type, malformed JSON or an unreadable CA file.
 */
export function destinationFrom(options: DestinationOptions): AuditStreamDestination {
  const kinds = Object.keys(TYPE_FLAGS) as Array<keyof typeof TYPE_FLAGS>;
  const given = (name: keyof DestinationOptions) => options[name] !== undefined && !FROM_ENVIRONMENT.has(name);
  const types = kinds.filter((type) => options[TYPE_FLAGS[type][0]] !== undefined);
  if (options.destination !== undefined) {
    if (kinds.some((type) => TYPE_FLAGS[type].some(given))) throw new UsageError('--destination cannot be combined with the flags of a destination type');
    try {
      return JSON.parse(options.destination) as AuditStreamDestination;
    } catch {
      throw new UsageError('--destination is not JSON, e.g. {"type":"https","url":"https://siem.example.com/wum"}');
    }
  }
  if (types.length !== 1) {
    throw new UsageError(
      `give one destination: --https-url, --splunk-url, --s3-bucket, --syslog-host or --destination <json>${types.length > 1 ? ` (got ${types.join(', ')})` : ''}`,
    );
  }
  const stray = kinds.flatMap((other) => (other === types[0] ? [] : TYPE_FLAGS[other].filter(given).map((name) => `${flag(name)} is for ${other} destinations`)));
  if (stray.length > 0) throw new UsageError(stray.join('; '));
  const [type] = types as [keyof typeof TYPE_FLAGS];
  const need = (name: keyof DestinationOptions) => required(options, name, type);
  switch (type) {
    case 'https':
      return { type, url: need('httpsUrl') };
    case 'splunk_hec':
      return { type, url: need('splunkUrl'), token: need('splunkToken') };
    case 's3':
      return {
        type,
        bucket: need('s3Bucket'),
        region: need('s3Region'),
        access_key_id: need('s3AccessKeyId'),
        secret_access_key: need('s3SecretAccessKey'),
        ...(options.s3Endpoint === undefined ? {} : { endpoint: options.s3Endpoint }),
        ...(options.s3Prefix === undefined ? {} : { prefix: options.s3Prefix }),
      };
    case 'syslog':
      return { type, host: need('syslogHost'), port: Number(need('syslogPort')), ...caCertificate(options.syslogCaFile) };
  }
}

/** `ca_certificate` read from `--syslog-ca-file`, when given. @throws UsageError when it cannot be read. */
function caCertificate(file: string | undefined): { ca_certificate?: string } {
  if (file === undefined) return {};
  try {
    return { ca_certificate: readFileSync(file, 'utf8') };
  } catch (error) {
    throw new UsageError(`cannot read --syslog-ca-file ${file}: ${(error as Error).message}`);
  }
}

/** Where a stream sends, in one short phrase (never a credential: the API answers none). */
export function destinationLabel(d: AuditStream['destination']): string {
  switch (d.type) {
    case 's3':
      return `s3 ${d.bucket}/${d.prefix ?? ''}${d.endpoint ? ` at ${d.endpoint}` : ''} (${d.region})`;
    case 'syslog':
      return `syslog ${d.host}:${d.port}`;
    default:
      return `${d.type} ${d.url}`;
  }
}

/** The health columns, shared by the list and a stream's details. */
const health = (s: AuditStream) => ({
  status: s.status,
  lag_rows: String(s.lag_rows),
  lag_seconds: String(s.lag_seconds),
  last_delivered_at: s.last_delivered_at ?? 'never',
  last_error: s.last_error ?? '',
});

/** A stream as a two-column table: settings, then health. */
function streamDetails(s: AuditStream): string {
  return details({
    id: s.id,
    name: s.name,
    workspace: s.workspace ?? '(every workspace)',
    format: s.format,
    actions: s.actions?.join(', ') ?? '(all)',
    destination: destinationLabel(s.destination),
    ...health(s),
    failing_since: s.failing_since ?? '',
    cursor: String(s.cursor),
    created_at: s.created_at,
  });
}

/** What `paused` means to the person reading it. */
const PAUSED_NOTE = 'Paused: nothing is sent; `resume` sends from the cursor, so no row is lost while audit retention keeps it.';

/** Prints a stream after a change, with the note a paused one needs. */
function printStream(verb: string, s: AuditStream | AuditStreamWithSecret, json: boolean | undefined): void {
  if (json) return printJson(s);
  say(`${verb} audit stream ${s.id} (${s.name}).`);
  if ('secret' in s && s.secret) {
    say('Its signing secret is shown only this once:');
    say('');
    say(`  ${s.secret}`);
    say('');
  }
  say(streamDetails(s));
  if (s.status === 'paused') say(PAUSED_NOTE);
}

/** `--action`, repeatable. */
const actionOption = () =>
  new Option('--action <action>', 'send only rows of this action, e.g. user.created (repeat for several; default: every action)').argParser(
    (value: string, previous: string[] = []) => [...previous, value],
  );

/** A TCP port, 1-65535. */
function port(value: string): number {
  const n = positiveInteger(value);
  if (n > 65535) throw new InvalidArgumentError('Not a port (1-65535).');
  return n;
}

/** Adds the destination flags of `create`. */
function withDestination<Args extends unknown[], Opts extends OptionValues, Globals extends OptionValues>(command: Command<Args, Opts, Globals>) {
  return command
    .option('--https-url <url>', 'https: POST signed JSON Lines batches to this URL')
    .option('--splunk-url <url>', "splunk_hec: the HTTP Event Collector's base URL (events go to <url>/services/collector/event)")
    .addOption(new Option('--splunk-token <token>', 'splunk_hec: the HEC token (prefer the environment variable, kept out of shell history)').env('WUM_SPLUNK_TOKEN'))
    .option('--s3-bucket <bucket>', 's3: the bucket (one gzipped JSON Lines object per batch)')
    .option('--s3-region <region>', "s3: the bucket's region, e.g. eu-west-1")
    .option('--s3-endpoint <url>', 's3: an S3-compatible server (default: AWS)')
    .option('--s3-prefix <prefix>', 's3: prepended to every object key, e.g. wum/audit/')
    .option('--s3-access-key-id <id>', 's3: the access key id')
    .addOption(
      new Option('--s3-secret-access-key <key>', 's3: the secret access key (prefer the environment variable, kept out of shell history)').env(
        'WUM_S3_SECRET_ACCESS_KEY',
      ),
    )
    .option('--syslog-host <host>', 'syslog: the server (RFC 5424 messages over TLS, RFC 5425)')
    .addOption(new Option('--syslog-port <port>', 'syslog: its TLS port, e.g. 6514').argParser(port))
    .option('--syslog-ca-file <file>', "syslog: a PEM CA certificate to trust instead of the system's")
    .option('--destination <json>', 'instead of the flags above: the destination as the API takes it, e.g. {"type":"https","url":"…"}');
}

/**
 * The audit stream commands (`list`, `create`, `get`, `pause`, `resume`, `delete`, `test`,
 * `replay`) on `side`'s API: `wum audit streams …` (the workspace's own streams; the key needs
 * `audit:write`) or `wum admin audit-streams …` (any workspace's, or every one's). `list` shows
 * each stream's health; `create` prints an https stream's signing secret, only this once; `test`
 * exits 1 when the destination refused the test row. Source: docs/api.md, "Audit streams".
 */
export function auditStreamsCommand(name: string, side: Side): CommandUnknownOpts {
  const streams = new Command(name).description(
    side === 'operator' ? "audit streams of any workspace, or of every one, to a SIEM, with their health" : "the workspace's audit streams to a SIEM, with their health (needs audit:write)",
  );

  const create = withDestination(
    streams
      .command('create <name>')
      .description('create a stream: it sends the audit rows written from now on (an https stream\'s signing secret is shown only this once)')
      .addOption(new Option('--format <format>', 'json: each row as the audit trail shows it; ocsf: an OCSF 1.x event').choices(['json', 'ocsf']).default('json'))
      .addOption(actionOption())
      // The operator's alone; hidden from, and refused by, the workspace's command.
      .addOption(new Option('--workspace <subdomain>', "send only this workspace's rows (default: every workspace's)").hideHelp(side !== 'operator')),
  );
  withJson(create).action(async (streamName, options, command) => {
    if (side !== 'operator' && options.workspace !== undefined) throw new UsageError('--workspace is for wum admin audit-streams');
    const created = await streamsOf(side, command).create({
      name: streamName,
      format: options.format,
      destination: destinationFrom(options),
      ...(options.action === undefined ? {} : { actions: options.action }),
      ...(options.workspace === undefined ? {} : { workspace: options.workspace }),
    });
    printStream('Created', created, options.json);
  });

  withJson(streams.command('list').description('list streams with their health: status, lag, last delivery, last error')).action(
    async (options, command) => {
      const list = await streamsOf(side, command).list();
      if (options.json) return printJson(list);
      if (list.length === 0) return say('No audit streams.');
      say(
        table(
          ['id', 'name', ...(side === 'operator' ? ['workspace'] : []), 'destination', 'status', 'lag_rows', 'lag_seconds', 'last_delivered_at', 'last_error'],
          list.map((s) => {
            const h = health(s);
            return [s.id, s.name, ...(side === 'operator' ? [s.workspace ?? '(all)'] : []), destinationLabel(s.destination), h.status, h.lag_rows, h.lag_seconds, h.last_delivered_at, h.last_error];
          }),
        ),
      );
      if (list.some((s) => s.status === 'paused')) say(PAUSED_NOTE);
    },
  );

  withJson(streams.command('get <id>').description('show a stream: its settings (never its credentials) and health')).action(
    async (id, options, command) => {
      const stream = await streamsOf(side, command).get(id);
      if (options.json) return printJson(stream);
      say(streamDetails(stream));
      if (stream.status === 'paused') say(PAUSED_NOTE);
    },
  );

  withJson(streams.command('pause <id>').description('stop sending (the cursor stays: resume sends what was written meanwhile)')).action(
    async (id, options, command) => printStream('Paused', await streamsOf(side, command).pause(id), options.json),
  );

  withJson(streams.command('resume <id>').description('send again from the cursor, at once (also a stream the service paused after failing)')).action(
    async (id, options, command) => printStream('Resumed', await streamsOf(side, command).resume(id), options.json),
  );

  withJson(streams.command('delete <id>').description('delete a stream (a batch already in flight may still arrive)')).action(
    async (id, options, command) => {
      await streamsOf(side, command).delete(id);
      if (options.json) return printJson({ id, deleted: true });
      say(`Deleted audit stream ${id}.`);
    },
  );

  withJson(streams.command('test <id>').description('send one synthetic row (audit_stream.test) now; exit 1 when the destination refuses it')).action(
    async (id, options, command) => {
      const outcome = await streamsOf(side, command).test(id);
      if (options.json) printJson(outcome);
      else if (outcome.ok) say('The destination accepted the test row.');
      if (!outcome.ok) {
        process.stderr.write(`The destination refused the test row: ${outcome.error ?? 'no reason given'}\n`);
        process.exitCode = 1;
      }
    },
  );

  withJson(
    streams
      .command('replay <id>')
      .description('send the rows from an instant on again, in order (moves the cursor back, never forward)')
      .addOption(new Option('--from <instant>', 'RFC 3339 instant, e.g. 2025-01-31T00:00:00Z').argParser(instant).makeOptionMandatory()),
  ).action(async (id, options, command) => {
    const replay = await streamsOf(side, command).replay(id, options.from);
    if (options.json) return printJson(replay);
    say(`Audit stream ${id} sends again from ${options.from} (cursor ${replay.audit_stream.cursor}, ${replay.audit_stream.lag_rows} rows to send).`);
    if (!replay.complete) say(`Rows before ${replay.oldest_kept_at} are no longer kept (AUDIT_RETENTION): they cannot be sent again.`);
  });

  return streams;
}
