import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { StreamDestination } from '../../../core/audit-streams/destination.ts';
import {
  createAuditStream,
  deleteAuditStream,
  getAuditStream,
  listAuditStreams,
  replayAuditStream,
  testAuditStream,
  updateAuditStream,
  type AuditStreamDependencies,
  type StreamOwner,
} from '../../../core/audit-streams/audit-streams-service.ts';
import type { Store } from '../../../core/ports.ts';
import {
  AuditStreamSchema,
  AuditStreamWithSecretSchema,
  OperatorWorkspace,
  ReplayBody,
  ReplaySchema,
  TestOutcomeSchema,
  UpdateAuditStreamBody,
  createAuditStreamBody,
  fromWireDestination,
  toWireAuditStream,
  type WireDestination,
} from '../../schemas/audit-streams.ts';
import { jsonResponse, problemResponses } from '../../schemas/common.ts';
import type { RouteMount } from '../route-mount.ts';

const EXAMPLE = {
  id: '5b0f7c9e-2d4a-4c1e-9f3b-7a6d8e2c1b40',
  workspace: 'acme',
  name: 'SIEM',
  format: 'json',
  actions: null,
  destination: { type: 'splunk_hec', url: 'https://splunk.example.com:8088', token_set: true },
  status: 'active',
  last_delivered_at: '2025-01-15T09:30:01.000Z',
  lag_rows: 0,
  lag_seconds: 0,
  last_error: null,
  failing_since: null,
  cursor: 42,
  created_at: '2025-01-15T09:00:00.000Z',
  updated_at: '2025-01-15T09:00:00.000Z',
};

/**
 * Routes of audit streams (docs/api.md, "Audit streams"): create (an `https` stream's signing
 * secret shown once), list, get, change (pause, resume), delete, test, replay. Mounted at
 * `/audit-streams` in the operator API, where a stream may cover one workspace or every one, and
 * in the workspace's own for the scope `audit:write`, where it covers that workspace. Every
 * change is audited in its transaction.
 */
export async function auditStreamsRoutes(
  app: FastifyInstance,
  options: { store: Store; mount: RouteMount; streams: AuditStreamDependencies },
): Promise<void> {
  const { store, mount, streams } = options;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const BASE = '/audit-streams';
  const StreamParams = Type.Object({ id: Type.String({ description: 'The stream\'s id.', examples: [EXAMPLE.id] }) });
  const NOT_FOUND = [...mount.errors.filter((code) => code !== 'workspace_not_found'), 'audit_stream_not_found'] as const;
  const BODY_ERRORS = ['validation_failed', 'unsupported_media_type', 'malformed_json'] as const;
  const security = mount.security('audit:write');
  const tags = mount.tags('audit');
  const owner = async (request: FastifyRequest): Promise<StreamOwner> =>
    mount.side === 'operator' ? 'operator' : { workspaceId: await mount.workspaceId(request, store) };

  api.post(BASE, {
    schema: {
      operationId: mount.pick('createAuditStream', 'createOwnAuditStream'),
      summary: 'Create an audit stream (an https stream\'s secret is shown only in this response)',
      description:
        'Sends the audit rows written from now on, in audit id order and at least once, to a SIEM: `https` (signed JSON Lines), ' +
        '`splunk_hec`, `s3` or `syslog`. The destination\'s address passes the outbound guard (`400 validation_failed`).' +
        mount.pick(' `workspace` names the workspace whose rows it sends; null or absent: every workspace\'s.', ''),
      tags,
      security,
      body: createAuditStreamBody(mount.side === 'operator' ? OperatorWorkspace : {}),
      response: {
        201: jsonResponse('The new stream; `secret` for an https destination, shown only here.', AuditStreamWithSecretSchema, { ...EXAMPLE, cursor: 42 }),
        ...problemResponses(...mount.errors, ...BODY_ERRORS, 'format_not_available', 'workspace_not_found'),
      },
    },
    handler: async (request, reply) => {
      const body = request.body as { workspace?: string | null; name: string; format: 'json' | 'ocsf'; actions?: string[] | null; destination: WireDestination };
      const workspace = mount.side === 'operator' ? (body.workspace ? { subdomain: body.workspace } : null) : { subdomain: mount.subdomain(request) };
      const { stream, secret } = await createAuditStream(
        store,
        workspace,
        { name: body.name, format: body.format, actions: body.actions ?? null, destination: fromWireDestination(body.destination) as StreamDestination },
        mount.actor(request),
        streams,
      );
      return reply.code(201).send({ ...toWireAuditStream(stream), ...(secret === undefined ? {} : { secret }) });
    },
  });

  api.get(BASE, {
    schema: {
      operationId: mount.pick('listAuditStreams', 'listOwnAuditStreams'),
      summary: 'List audit streams, with their health',
      description: mount.pick('Every stream, of every workspace, oldest first.', 'The workspace\'s streams, oldest first.'),
      tags,
      security,
      response: {
        200: jsonResponse('The streams.', Type.Object({ audit_streams: Type.Array(AuditStreamSchema) }), { audit_streams: [EXAMPLE] }),
        ...problemResponses(...mount.errors),
      },
    },
    handler: async (request) => ({ audit_streams: (await listAuditStreams(store, await owner(request))).map(toWireAuditStream) }),
  });

  api.get(`${BASE}/:id`, {
    schema: {
      operationId: mount.pick('getAuditStream', 'getOwnAuditStream'),
      summary: 'Get an audit stream and its health',
      description: 'Its settings (never its credentials) and health: `status`, `last_delivered_at`, `lag_rows`, `lag_seconds`, `last_error`.',
      tags,
      security,
      params: StreamParams,
      response: { 200: jsonResponse('The stream.', AuditStreamSchema, EXAMPLE), ...problemResponses(...NOT_FOUND) },
    },
    handler: async (request) => toWireAuditStream(await getAuditStream(store, await owner(request), request.params.id)),
  });

  api.patch(`${BASE}/:id`, {
    schema: {
      operationId: mount.pick('updateAuditStream', 'updateOwnAuditStream'),
      summary: 'Change, pause or resume an audit stream',
      description:
        'Changes the fields given. A destination replaces the old one; its credentials may be left out to keep the stored ones ' +
        '(same type). `status: "paused"` stops sending; `status: "active"` resumes from the cursor at once (also after the ' +
        'service paused a failing stream).',
      tags,
      security,
      params: StreamParams,
      body: UpdateAuditStreamBody,
      response: {
        200: jsonResponse('The stream after the change; `secret` when it changed to a new https destination.', AuditStreamWithSecretSchema, EXAMPLE),
        ...problemResponses(...NOT_FOUND, ...BODY_ERRORS, 'format_not_available'),
      },
    },
    handler: async (request) => {
      const body = request.body;
      const { stream, secret } = await updateAuditStream(
        store,
        await owner(request),
        request.params.id,
        {
          ...(body.name === undefined ? {} : { name: body.name }),
          ...(body.format === undefined ? {} : { format: body.format }),
          ...(body.actions === undefined ? {} : { actions: body.actions }),
          ...(body.destination === undefined ? {} : { destination: fromWireDestination(body.destination as WireDestination) }),
          ...(body.status === undefined ? {} : { status: body.status }),
        },
        mount.actor(request),
        streams,
        (stored) => store.openSecret(stored),
      );
      return { ...toWireAuditStream(stream), ...(secret === undefined ? {} : { secret }) };
    },
  });

  api.delete(`${BASE}/:id`, {
    schema: {
      operationId: mount.pick('deleteAuditStream', 'deleteOwnAuditStream'),
      summary: 'Delete an audit stream',
      description: 'Nothing more is sent; a batch in flight may still arrive.',
      tags,
      security,
      params: StreamParams,
      response: { 204: { type: 'null', description: 'Deleted.' }, ...problemResponses(...NOT_FOUND) },
    },
    handler: async (request, reply) => {
      await deleteAuditStream(store, await owner(request), request.params.id, mount.actor(request));
      return reply.code(204).send();
    },
  });

  api.post(`${BASE}/:id/test`, {
    schema: {
      operationId: mount.pick('testAuditStream', 'testOwnAuditStream'),
      summary: 'Send one synthetic row to the stream\'s destination now',
      description: 'A row with `action` `audit_stream.test` and id 0, in the stream\'s format; the answer says whether the destination accepted it. The cursor and health are left alone.',
      tags,
      security,
      params: StreamParams,
      response: { 200: jsonResponse('What the destination answered.', TestOutcomeSchema, { ok: true, error: null }), ...problemResponses(...NOT_FOUND) },
    },
    handler: async (request) => {
      const outcome = await testAuditStream(store, await owner(request), request.params.id, streams.sendTest);
      return { ok: outcome.ok, error: outcome.ok ? null : outcome.error };
    },
  });

  api.post(`${BASE}/:id/replay`, {
    schema: {
      operationId: mount.pick('replayAuditStream', 'replayOwnAuditStream'),
      summary: 'Send the rows from an instant on again',
      description:
        'Moves the cursor back to just before the first row at or after `from` (never forward); the rows are sent again, in order. ' +
        'Rows older than `AUDIT_RETENTION` are gone: `complete` is false when the oldest row kept is newer than `from`.',
      tags,
      security,
      params: StreamParams,
      body: ReplayBody,
      response: {
        200: jsonResponse('The stream after the rewind.', ReplaySchema, { audit_stream: EXAMPLE, oldest_kept_at: '2024-01-15T09:00:00.000Z', complete: true }),
        ...problemResponses(...NOT_FOUND, ...BODY_ERRORS),
      },
    },
    handler: async (request) => {
      const from = new Date(request.body.from);
      const { stream, oldestKept } = await replayAuditStream(store, await owner(request), request.params.id, from, mount.actor(request));
      return { audit_stream: toWireAuditStream(stream), oldest_kept_at: oldestKept, complete: oldestKept === null || oldestKept <= from };
    },
  });
}
