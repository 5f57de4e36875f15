import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { stringify } from 'csv-stringify';
import { keyActor } from '../../../core/api-keys/authenticate.ts';
import { AppError } from '../../../core/errors.ts';
import type { Store } from '../../../core/ports.ts';
import type { ImportReportRow, StagedImportRow } from '../../../core/users/import-job.ts';
import { IMPORT_LIMITS } from '../../../core/users/import-job.ts';
import { cancelImport, getImport, importReport, listImports, startImport } from '../../../core/users/imports-service.ts';
import { csvRows, jsonLinesRows } from '../../import-rows.ts';
import { paginationLinks } from '../../link-header.ts';
import { tenantOf } from '../../plugins/tenant.ts';
import { scoped } from '../../route-scopes.ts';
import {
  EXTERNAL_API_ERRORS,
  LinkHeader,
  PageQuery,
  PaginationSchema,
  StringEnum,
  jsonResponse,
  problemResponses,
  toWirePagination,
} from '../../schemas/common.ts';
import { ImportJobSchema, JOB_EXAMPLE, toWireJob } from '../../schemas/imports.ts';

/** The media types an upload may have, with the rows each is read as. */
const UPLOAD_FORMATS = {
  'text/csv': { format: 'csv', rows: csvRows },
  'application/x-ndjson': { format: 'ndjson', rows: jsonLinesRows },
} as const;

const JobParams = Type.Object({ id: Type.String({ description: 'The job\'s id.', examples: [JOB_EXAMPLE.id] }) });

/** The report's columns, in order: the columns of `wum users import`'s report. */
const REPORT_COLUMNS = ['row', 'email', 'outcome', 'code', 'detail'] as const;

/** A report row on the wire. */
function toWireReportRow(r: ImportReportRow) {
  return { row: r.row, email: r.email, outcome: r.outcome, code: r.code, detail: r.detail };
}

/** The report as a JSON document `{"rows": [...]}`, written row by row. */
function jsonReport(rows: AsyncIterable<ImportReportRow>): Readable {
  return Readable.from(
    (async function* () {
      yield '{"rows":[';
      let first = true;
      for await (const row of rows) {
        yield `${first ? '' : ','}${JSON.stringify(toWireReportRow(row))}`;
        first = false;
      }
      yield ']}';
    })(),
  );
}

/** The report as CSV with a header row, written row by row. */
function csvReport(rows: AsyncIterable<ImportReportRow>): Readable {
  return Readable.from(rows).map((r: ImportReportRow) => REPORT_COLUMNS.map((c) => toWireReportRow(r)[c] ?? '')).pipe(stringify({ header: true, columns: [...REPORT_COLUMNS] }));
}

/** True when `Accept` names CSV and not JSON (the report's default). */
function wantsCsv(accept: string | undefined): boolean {
  return accept !== undefined && /\btext\/csv\b/i.test(accept) && !/\bapplication\/json\b/i.test(accept);
}

/** The path of a job, for `Location`. */
function jobLocation(prefix: string, id: string): string {
  return `${prefix}/users/imports/${id}`;
}

/**
 * `POST /users/imports` (upload a file, start a job), `GET /users/imports`, `GET
 * /users/imports/{id}`, `GET /users/imports/{id}/report`, `POST /users/imports/{id}/cancel`.
 * Source: docs/contract.md Part B, "Importing users in bulk"; docs/api.md.
 */
export async function importsRoutes(app: FastifyInstance, options: { store: Store; prefix: string }): Promise<void> {
  const { store, prefix } = options;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  // The body is read as it streams in, never held whole: its parser only hands the stream on.
  for (const type of Object.keys(UPLOAD_FORMATS)) app.addContentTypeParser(type, (_request, payload, done) => done(null, payload));

  api.post('/users/imports', {
    schema: {
      operationId: 'startUserImport',
      summary: 'Import users in bulk: upload a file, start a job',
      description:
        'The body is a CSV file with the columns of `wum users import` (`Content-Type: text/csv`; header row `email,role,' +
        'first_name,last_name,apps,expires_at`, `email` and `role` required) or JSON Lines (`application/x-ndjson`), one `POST ' +
        `/users\` body per line; at most ${IMPORT_LIMITS.maxRows} rows and ${IMPORT_LIMITS.maxBytes} bytes, sent as a stream. ` +
        'The rows are staged as they arrive; the answer, once the upload is complete, is the queued job. Each row is then ' +
        'applied as `POST /users` would (added, reactivated, skipped when active already, or rejected with the problem\'s ' +
        'code). One job per workspace at a time: `409 import_in_progress` while another is queued or running.',
      tags: ['users'],
      security: scoped('users:write'),
      consumes: Object.keys(UPLOAD_FORMATS),
      response: {
        202: jsonResponse('The job, queued. `Location` points at it.', Type.Ref(ImportJobSchema), { ...JOB_EXAMPLE, status: 'queued', rows_done: 38, added: 0, reactivated: 0, skipped: 0, started_at: null }, {
          Location: { type: 'string', description: 'Path of the job: `/api/external/v2/users/imports/{id}`.' },
        }),
        ...problemResponses(...EXTERNAL_API_ERRORS, 'unsupported_media_type', 'payload_too_large', 'invalid_import_file', 'import_in_progress'),
      },
    },
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      const type = (request.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase() as keyof typeof UPLOAD_FORMATS;
      const upload = UPLOAD_FORMATS[type];
      if (!upload || !(request.body instanceof Readable)) {
        throw new AppError('unsupported_media_type', 'Send the file as text/csv or application/x-ndjson.');
      }
      const rows: AsyncIterable<StagedImportRow> = upload.rows(request.body);
      const actor = keyActor(tenantOf(request), 'api_key', request.id);
      const job = await startImport(store, tenantOf(request).workspace.id, actor, upload.format, rows, `upload:${randomUUID()}`);
      return reply.code(202).header('location', jobLocation(prefix, job.id)).send(toWireJob(job));
    },
  });

  api.get('/users/imports', {
    schema: {
      operationId: 'listUserImports',
      summary: 'List the import jobs',
      description: 'The workspace\'s import jobs, newest first, with their status and counts.',
      tags: ['users'],
      security: scoped('users:read'),
      querystring: Type.Object({ ...PageQuery }),
      response: {
        200: jsonResponse(
          'A page of jobs with its pagination envelope.',
          Type.Object({ imports: Type.Array(Type.Ref(ImportJobSchema)), pagination: PaginationSchema }),
          { imports: [JOB_EXAMPLE], pagination: { total_records: 1, current_page_number: 1, total_pages: 1, page_size: 30 } },
          { Link: LinkHeader },
        ),
        ...problemResponses(...EXTERNAL_API_ERRORS, 'invalid_parameter'),
      },
    },
    handler: async (request, reply) => {
      const page = await listImports(store, tenantOf(request).workspace.id, {
        pageNumber: request.query.page_number,
        pageSize: request.query.page_size,
      });
      reply.header('link', paginationLinks(request, page.pagination));
      return { imports: page.items.map(toWireJob), ...toWirePagination(page.pagination) };
    },
  });

  api.get('/users/imports/:id', {
    schema: {
      operationId: 'getUserImport',
      summary: 'Get an import job and its progress',
      description: 'The job with its status and counts; `rows_done` moves one batch at a time while it runs.',
      tags: ['users'],
      security: scoped('users:read'),
      params: JobParams,
      response: {
        200: jsonResponse('The job.', Type.Ref(ImportJobSchema), JOB_EXAMPLE),
        ...problemResponses(...EXTERNAL_API_ERRORS, 'import_not_found'),
      },
    },
    handler: async (request) => toWireJob(await getImport(store, tenantOf(request).workspace.id, request.params.id)),
  });

  api.get('/users/imports/:id/report', {
    schema: {
      operationId: 'getUserImportReport',
      summary: 'The per-row report of an import job',
      description:
        'One line per row of the upload, in file order: `row` (its line in the file; the CSV header is line 1), `email`, ' +
        '`outcome` (`added`, `reactivated`, `skipped`, `rejected`, or `not_attempted` for rows not processed yet or left by a ' +
        'cancel), `code` and `detail` (why a row was skipped or rejected). JSON `{"rows": [...]}`, or CSV with these columns ' +
        'when `Accept` names `text/csv` (and not `application/json`).',
      tags: ['users'],
      security: scoped('users:read'),
      params: JobParams,
        response: {
        200: jsonResponse(
          'The report.',
          Type.Object({
            rows: Type.Array(
              Type.Object({
                row: Type.Integer(),
                email: Type.String(),
                outcome: StringEnum(['added', 'reactivated', 'skipped', 'rejected', 'not_attempted']),
                code: Type.Union([Type.String(), Type.Null()]),
                detail: Type.Union([Type.String(), Type.Null()]),
              }),
            ),
          }),
          { rows: [{ row: 2, email: 'ada@example.com', outcome: 'added', code: null, detail: null }] },
        ),
        ...problemResponses(...EXTERNAL_API_ERRORS, 'import_not_found'),
      },
    },
    handler: async (request, reply) => {
      const rows = await importReport(store, tenantOf(request).workspace.id, request.params.id);
      reply.header('vary', 'Accept');
      if (wantsCsv(request.headers.accept)) return reply.type('text/csv; charset=utf-8').send(csvReport(rows) as never);
      return reply.type('application/json; charset=utf-8').send(jsonReport(rows) as never);
    },
  });

  api.post('/users/imports/:id/cancel', {
    schema: {
      operationId: 'cancelUserImport',
      summary: 'Cancel an import job',
      description:
        'Stops a queued or running job: the batch under way finishes, no other starts, and the rows left are reported ' +
        '`not_attempted`. Users already added stay. A job already over → `409 import_finished`.',
      tags: ['users'],
      security: scoped('users:write'),
      params: JobParams,
      response: {
        200: jsonResponse('The job, cancelled.', Type.Ref(ImportJobSchema), { ...JOB_EXAMPLE, status: 'cancelled', completed_at: '2025-01-15T09:31:00.000Z' }),
        ...problemResponses(...EXTERNAL_API_ERRORS, 'import_not_found', 'import_finished'),
      },
    },
    handler: async (request) => toWireJob(await cancelImport(store, tenantOf(request).workspace.id, request.params.id)),
  });
}
