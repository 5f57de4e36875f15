import { Type, type TProperties, type TString } from '@sinclair/typebox';
import { STREAM_FORMATS, type AuditStreamWithLag, type PublicDestination } from '../../core/audit-streams/audit-stream.ts';
import type { StreamDestination } from '../../core/audit-streams/destination.ts';
import type { StreamPatch } from '../../core/audit-streams/audit-streams-service.ts';
import { MAX_WEBHOOK_URL_LENGTH } from '../../core/webhooks/webhook-endpoint.ts';
import { SUBDOMAIN_PATTERN } from './admin.ts';
import { NullableTimestamp, StringEnum, Timestamp } from './common.ts';

/*
 * The wire of audit streams (docs/api.md, "Audit streams"). A destination's credentials
 * (`token`, `secret_access_key`) are accepted and never answered: the answer says `token_set`.
 */

const Url = (what: string) =>
  Type.String({
    minLength: 1,
    maxLength: MAX_WEBHOOK_URL_LENGTH,
    description: `${what}: \`https://\` (\`http://\` to loopback only when the service allows it); private, loopback and metadata addresses are refused unless the operator allowed them.`,
  });
const Token = Type.String({ minLength: 1, maxLength: 1024, description: 'The HEC token. Write-only: never answered.' });
const SecretKey = Type.String({ minLength: 1, maxLength: 1024, description: 'The secret access key. Write-only: never answered.' });
const Text = (description: string, maxLength = 255) => Type.String({ minLength: 1, maxLength, description });

/** The four destination types, with their credentials required (`create`) or optional (`patch`: kept when left out). */
function destinations(optionalCredentials: boolean) {
  const credential = (schema: TString) => (optionalCredentials ? Type.Optional(schema) : schema);
  const closed = { additionalProperties: false };
  return Type.Union(
    [
      Type.Object({ type: Type.Literal('https'), url: Url('Where batches are POSTed') }, { ...closed, title: 'https' }),
      Type.Object({ type: Type.Literal('splunk_hec'), url: Url("The collector's base URL"), token: credential(Token) }, { ...closed, title: 'splunk_hec' }),
      Type.Object(
        {
          type: Type.Literal('s3'),
          endpoint: Type.Optional(Url('An S3-compatible server (absent: AWS)')),
          region: Text('The bucket\'s region, e.g. `eu-west-1`.', 64),
          bucket: Text('The bucket.', 255),
          prefix: Type.Optional(Type.String({ maxLength: 512, description: 'Prepended to every object key, e.g. `wum/audit/`.' })),
          access_key_id: Text('The access key id.', 256),
          secret_access_key: credential(SecretKey),
        },
        { ...closed, title: 's3' },
      ),
      Type.Object(
        {
          type: Type.Literal('syslog'),
          host: Text('The syslog server (RFC 5425, TLS).', 253),
          port: Type.Integer({ minimum: 1, maximum: 65535, description: 'Its TLS port, e.g. 6514.' }),
          ca_certificate: Type.Optional(Type.String({ minLength: 1, maxLength: 16_384, description: 'A PEM CA certificate to trust instead of the system\'s.' })),
        },
        { ...closed, title: 'syslog' },
      ),
    ],
    { description: 'Where the rows go: `https`, `splunk_hec`, `s3` or `syslog`.' },
  );
}

const CreateDestination = destinations(false);
const PatchDestination = destinations(true);

const Name = Text('A name for people.', 200);
const Format = StringEnum(STREAM_FORMATS, { description: '`json`: each row as `GET /audit-events` shows it; `ocsf`: an OCSF 1.x event.' });
const Actions = Type.Union([Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { minItems: 1, maxItems: 100, uniqueItems: true }), Type.Null()], {
  description: 'Only rows of these actions (e.g. `user.created`); null or absent: every action.',
});

/** Body of `POST …/audit-streams`; the operator's may name the workspace (`workspaceProperty`). */
export function createAuditStreamBody(workspaceProperty: TProperties) {
  return Type.Object(
    { ...workspaceProperty, name: Name, format: Format, actions: Type.Optional(Actions), destination: CreateDestination },
    {
      additionalProperties: false,
      examples: [{ name: 'SIEM', format: 'json', destination: { type: 'splunk_hec', url: 'https://splunk.example.com:8088', token: '8f0c…' } }],
    },
  );
}

/** The operator's `workspace` member: a subdomain, or null (absent) for every workspace. */
export const OperatorWorkspace = {
  workspace: Type.Optional(
    Type.Union([Type.String({ pattern: SUBDOMAIN_PATTERN }), Type.Null()], {
      description: 'The workspace whose rows it sends; null or absent: every workspace\'s and the operator\'s own.',
      examples: ['acme'],
    }),
  ),
};

/** Body of `PATCH …/audit-streams/{id}`. */
export const UpdateAuditStreamBody = Type.Object(
  {
    name: Type.Optional(Name),
    format: Type.Optional(Format),
    actions: Type.Optional(Actions),
    destination: Type.Optional(PatchDestination),
    status: Type.Optional(StringEnum(['active', 'paused'] as const, { description: '`paused` stops sending; `active` resumes from the cursor at once.' })),
  },
  { additionalProperties: false, examples: [{ status: 'active' }] },
);

/** Body of `POST …/audit-streams/{id}/replay`. */
export const ReplayBody = Type.Object(
  { from: Type.String({ format: 'date-time', description: 'RFC 3339: the rows from this instant on are sent again.', examples: ['2025-01-15T00:00:00Z'] }) },
  { additionalProperties: false, examples: [{ from: '2025-01-15T00:00:00Z' }] },
);

const DestinationOut = Type.Object(
  {
    type: StringEnum(['https', 'splunk_hec', 's3', 'syslog'] as const),
    url: Type.Optional(Type.String()),
    token_set: Type.Optional(Type.Boolean({ description: '`splunk_hec`: a token is stored (it is never shown).' })),
    endpoint: Type.Optional(Type.String()),
    region: Type.Optional(Type.String()),
    bucket: Type.Optional(Type.String()),
    prefix: Type.Optional(Type.String()),
    access_key_id: Type.Optional(Type.String()),
    secret_access_key_set: Type.Optional(Type.Boolean({ description: '`s3`: a secret key is stored (it is never shown).' })),
    host: Type.Optional(Type.String()),
    port: Type.Optional(Type.Integer()),
    ca_certificate: Type.Optional(Type.String()),
  },
  { description: 'The destination without its credentials.' },
);

const streamFields = {
  id: Type.String({ format: 'uuid' }),
  workspace: Type.Union([Type.String(), Type.Null()], { description: 'The workspace whose rows it sends; null: every workspace (an operator\'s stream).' }),
  name: Type.String(),
  format: StringEnum(STREAM_FORMATS),
  actions: Type.Union([Type.Array(Type.String()), Type.Null()]),
  destination: DestinationOut,
  status: StringEnum(['active', 'failing', 'paused'] as const, {
    description: '`active`: delivering; `failing`: the last batch failed and is retried with backoff; `paused`: nothing is sent until resumed.',
  }),
  last_delivered_at: { ...NullableTimestamp, description: 'When a batch was last accepted.' },
  lag_rows: Type.Integer({ description: 'Audit rows not yet delivered (after the cursor, of its workspace and actions).' }),
  lag_seconds: Type.Number({ description: 'Age of the oldest of them, in seconds; 0 when none.' }),
  last_error: Type.Union([Type.String(), Type.Null()], { description: 'What the destination answered to the last failed batch; null after a success.' }),
  failing_since: { ...NullableTimestamp, description: 'Since when it fails without a success; null when not failing.' },
  cursor: Type.Integer({ description: 'The last audit id delivered.' }),
  created_at: Timestamp,
  updated_at: Timestamp,
};

/** An audit stream on the wire: settings and health, never its credentials. */
export const AuditStreamSchema = Type.Object(streamFields, { description: 'An audit stream.' });

/** The answer of a create (or a change to a new `https` destination): with the signing secret, shown once. */
export const AuditStreamWithSecretSchema = Type.Object(
  { ...streamFields, secret: Type.Optional(Type.String({ description: '`https` only: the signing secret (`whsec_…`, Standard Webhooks), shown only in this answer.' })) },
  { description: 'An audit stream, with the signing secret of a new `https` destination.' },
);

/** The answer of a replay. */
export const ReplaySchema = Type.Object({
  audit_stream: AuditStreamSchema,
  oldest_kept_at: { ...NullableTimestamp, description: 'The oldest audit row still kept (AUDIT_RETENTION removes older ones); null when none.' },
  complete: Type.Boolean({ description: 'False when the oldest row kept is newer than `from`: rows between may have been removed by retention.' }),
});

/** The answer of a test send. */
export const TestOutcomeSchema = Type.Object({
  ok: Type.Boolean({ description: 'Whether the destination accepted the synthetic row.' }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'What went wrong, when it did not.' }),
});

function toWireDestination(d: PublicDestination) {
  switch (d.type) {
    case 'https':
      return { type: d.type, url: d.url };
    case 'splunk_hec':
      return { type: d.type, url: d.url, token_set: true };
    case 's3':
      return {
        type: d.type,
        ...(d.endpoint === undefined ? {} : { endpoint: d.endpoint }),
        region: d.region,
        bucket: d.bucket,
        ...(d.prefix === undefined ? {} : { prefix: d.prefix }),
        access_key_id: d.accessKeyId,
        secret_access_key_set: true,
      };
    case 'syslog':
      return { type: d.type, host: d.host, port: d.port, ...(d.caCertificate === undefined ? {} : { ca_certificate: d.caCertificate }) };
  }
}

/** A stream on the wire. */
export const toWireAuditStream = (s: AuditStreamWithLag) => ({
  id: s.id,
  workspace: s.workspace,
  name: s.name,
  format: s.format,
  actions: s.actions === null ? null : [...s.actions],
  destination: toWireDestination(s.destination),
  status: s.status,
  last_delivered_at: s.lastDeliveredAt,
  lag_rows: s.lag.rows,
  lag_seconds: Math.round(s.lag.seconds * 1000) / 1000,
  last_error: s.lastError,
  failing_since: s.failingSince,
  cursor: s.cursor,
  created_at: s.createdAt,
  updated_at: s.updatedAt,
});

/** A destination as a request body carries it (any of the four types). */
export type WireDestination = {
  type: StreamDestination['type'];
  url?: string;
  token?: string;
  endpoint?: string;
  region?: string;
  bucket?: string;
  prefix?: string;
  access_key_id?: string;
  secret_access_key?: string;
  host?: string;
  port?: number;
  ca_certificate?: string;
};

/** A destination of a request body in the domain's names (credentials included when given). */
export function fromWireDestination(d: WireDestination): StreamPatch['destination'] & {} {
  switch (d.type) {
    case 'https':
      return { type: 'https', url: d.url! };
    case 'splunk_hec':
      return { type: 'splunk_hec', url: d.url!, ...(d.token === undefined ? {} : { token: d.token }) };
    case 's3':
      return {
        type: 's3',
        ...(d.endpoint === undefined ? {} : { endpoint: d.endpoint }),
        region: d.region!,
        bucket: d.bucket!,
        ...(d.prefix === undefined ? {} : { prefix: d.prefix }),
        accessKeyId: d.access_key_id!,
        ...(d.secret_access_key === undefined ? {} : { secretAccessKey: d.secret_access_key }),
      };
    case 'syslog':
      return { type: 'syslog', host: d.host!, port: d.port!, ...(d.ca_certificate === undefined ? {} : { caCertificate: d.ca_certificate }) };
  }
}
