import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { exportAuditEvents, type AuditExportScope } from '../../../core/audit/audit-service.ts';
import type { Store } from '../../../core/ports.ts';
import type { AuditFilter } from '../../../core/audit/audit-repository.ts';
import { auditExportStream, type AuditExportFormat } from '../../audit-export-stream.ts';
import { ADMIN_EXAMPLES, AuditExportQuery, GlobalAuditExportQuery } from '../../schemas/admin.ts';
import { problemResponses } from '../../schemas/common.ts';
import { AUTH, security, tags } from './admin-common.ts';
import { auditFilter } from './audit-routes.ts';
import type { RouteMount } from '../route-mount.ts';

/** The 200 of an export in the OpenAPI document: a body of either media type, streamed. */
const exportResponse = {
  description: 'The events, oldest first, streamed as they are read (`format`): JSON Lines, or CSV with a header row.',
  headers: { 'Content-Disposition': { type: 'string', description: '`attachment` with a file name, e.g. `audit-events-acme.jsonl`.' } },
  content: {
    'application/x-ndjson': {
      schema: Type.String({ description: 'One event per line, each exactly as the listing shows it.' }),
      example: `${JSON.stringify(ADMIN_EXAMPLES.auditEvent)}\n`,
    },
    'text/csv': {
      schema: Type.String({ description: 'A header row, then one row per event; `before` and `after` as JSON.' }),
      example:
        'id,occurred_at,actor_type,actor_id,actor_label,request_id,action,target_type,target_id,user_id,before,after\n' +
        '42,2025-01-15T09:30:00.000Z,operator,,operator,7f1c2a9e,workspace.created,workspace,acme,,,"{""subdomain"":""acme""}"\n',
    },
  },
};

const DESCRIPTION =
  'Every event that the filters (`action`, `actor_type`, `target_id`, `since`, `until`) select, oldest first, up to the last ' +
  'one written when the export started, streamed without being held in memory: a long trail arrives as fast as the client ' +
  'reads. JSON Lines carry each event exactly as the listing shows it; CSV cells that a spreadsheet would read as a formula ' +
  'start with `\'`, as in the user export.';

/** Sends an export as an attachment named after what it covers. */
async function sendExport(
  reply: FastifyReply,
  store: Store,
  scope: AuditExportScope,
  filter: AuditFilter,
  format: AuditExportFormat,
): Promise<FastifyReply> {
  // The workspace is looked up before the first byte, so a missing one is still a 404 problem.
  const batches = await exportAuditEvents(store, scope, filter);
  const { body, contentType } = auditExportStream(batches, format, !('subdomain' in scope));
  const name = 'subdomain' in scope ? scope.subdomain.toLowerCase() : (scope.workspace?.toLowerCase() ?? 'all');
  return reply
    .type(contentType)
    .header('content-disposition', `attachment; filename="audit-events-${name}.${format}"`)
    .header('cache-control', 'no-store')
    .send(body);
}

/**
 * `GET …/audit-events/export` of one workspace, on the operator API and (scope `audit:read`)
 * on the workspace's own. Source: docs/api.md, "Exporting the audit trail".
 */
export async function workspaceAuditExportRoutes(app: FastifyInstance, options: { store: Store; mount: RouteMount }): Promise<void> {
  const { store, mount } = options;
  const path = `${mount.base}/audit-events/export`;
  app.withTypeProvider<TypeBoxTypeProvider>().get(path, {
    schema: {
      operationId: mount.pick('exportWorkspaceAuditEvents', 'exportOwnAuditEvents'),
      summary: mount.pick("Export a workspace's audit events", "Export the workspace's audit events"),
      description: DESCRIPTION,
      tags: mount.tags('audit'),
      security: mount.security('audit:read'),
      params: Type.Object(mount.params),
      querystring: AuditExportQuery,
      response: { 200: exportResponse, ...problemResponses(...mount.errors, 'invalid_parameter') },
    },
    handler: async (request, reply) => {
      const { format, ...filters } = request.query;
      return sendExport(reply, store, { subdomain: mount.subdomain(request) }, auditFilter(filters), format);
    },
  });
}

/**
 * The operator's `GET /audit-events/export`: every workspace's events and the catalogue's (or
 * `workspace`'s), each naming its workspace. Source: docs/api.md, "Exporting the audit trail".
 */
export async function auditExportRoutes(app: FastifyInstance, options: { store: Store }): Promise<void> {
  const { store } = options;
  app.withTypeProvider<TypeBoxTypeProvider>().get('/audit-events/export', {
    schema: {
      operationId: 'exportAuditEvents',
      summary: 'Export every audit event, catalogue changes included',
      description: `${DESCRIPTION} Each event names its workspace (\`workspace\`, a column in CSV); \`workspace\` narrows the export to one.`,
      tags,
      security,
      querystring: GlobalAuditExportQuery,
      response: { 200: exportResponse, ...problemResponses(...AUTH, 'invalid_parameter') },
    },
    handler: async (request, reply) => {
      const { format, workspace, ...filters } = request.query;
      return sendExport(reply, store, { all: true, ...(workspace === undefined ? {} : { workspace }) }, auditFilter(filters), format);
    },
  });
}
