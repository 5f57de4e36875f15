import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import { AppError } from '../core/errors.ts';
import { IMPORT_LIMITS, type StagedImportRow } from '../core/users/import-job.ts';
import { ImportFileError, importColumns, parseImportRecord } from '../../sdk/users-csv.ts';
import { addUserInputOf } from './routes/external/users-routes.ts';
import { AddUserBody } from './schemas/users.ts';
import { bodyValidator } from './validation.ts';

/*
 * The rows of an import upload, read from the body as it streams in (docs/contract.md Part B,
 * "Importing users in bulk"): each row is checked as `POST /users` checks its body, and an
 * invalid row becomes a rejected row with the problem's code, never a failed upload. Only a
 * body that is no file of its kind at all (a CSV without the header row, too large) fails.
 */

const validateAddUser = bodyValidator(AddUserBody);

/** A row's problem as its report shows it: the detail with each field's message. */
function rejection(error: AppError): { code: string; detail: string } {
  const fields = error.errors?.map((e) => `${e.field}: ${e.message}`).join('; ');
  return { code: error.code, detail: fields ? `${error.detail} (${fields})` : error.detail };
}

/** A `POST /users` body of line `row` → the staged row, checked as the route checks it. */
function stagedRow(row: number, body: unknown): StagedImportRow {
  const user = (body as { user?: { email?: unknown } } | null)?.user;
  // As the route's preValidation does: the email without surrounding spaces.
  if (user && typeof user === 'object' && typeof user.email === 'string') user.email = user.email.trim();
  const email = typeof user?.email === 'string' ? user.email : '';
  const invalid = validateAddUser(body);
  if (invalid) return { row, email, rejection: rejection(invalid) };
  return { row, email, user: addUserInputOf((body as { user: Parameters<typeof addUserInputOf>[0] }).user) };
}

/** Counts the body's bytes as they pass, refusing more than the upload's limit. */
async function* limited(body: Readable): AsyncIterable<Buffer> {
  let bytes = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > IMPORT_LIMITS.maxBytes) {
      throw new AppError('payload_too_large', `An import body holds at most ${IMPORT_LIMITS.maxBytes} bytes.`);
    }
    yield chunk;
  }
}

/**
 * The rows of a JSON Lines body: one `POST /users` body per line (blank lines skipped), each
 * numbered by its line. A line that is not JSON is rejected `malformed_json`.
 * @throws AppError `payload_too_large` (413) past the upload's limits.
 */
export async function* jsonLinesRows(body: Readable): AsyncIterable<StagedImportRow> {
  let line = 0;
  for await (const text of createInterface({ input: Readable.from(limited(body)), crlfDelay: Infinity })) {
    line += 1;
    if (!text.trim()) continue;
    if (text.length > IMPORT_LIMITS.maxRowBytes) {
      yield { row: line, email: '', rejection: { code: 'payload_too_large', detail: `A row holds at most ${IMPORT_LIMITS.maxRowBytes} bytes.` } };
      continue;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      yield { row: line, email: '', rejection: { code: 'malformed_json', detail: `The line is not JSON: ${(error as Error).message}` } };
      continue;
    }
    yield stagedRow(line, parsed);
  }
}

/**
 * The rows of a CSV body with the columns of `wum users import` (a header row first; see
 * sdk/users-csv.ts), each numbered by the line it ends on (the header is line 1).
 * @throws AppError `invalid_import_file` (422) when the header is missing or wrong, or the body
 *   is not CSV; `payload_too_large` (413) past the upload's limits.
 */
export async function* csvRows(body: Readable): AsyncIterable<StagedImportRow> {
  const parser = parse({ bom: true, skip_empty_lines: true, relax_column_count: true, info: true, max_record_size: IMPORT_LIMITS.maxRowBytes });
  const source = Readable.from(limited(body));
  // A failure of the body (too large, cut off) ends the parser with it.
  source.once('error', (error) => parser.destroy(error));
  const records = source.pipe(parser) as AsyncIterable<{ record: string[]; info: { lines: number } }>;
  let columns: string[] | undefined;
  try {
    for await (const { record, info } of records) {
      const line = { cells: record, line: info.lines };
      if (!columns) {
        columns = importColumns(line, 'the file');
        continue;
      }
      const parsed = parseImportRecord(columns, line);
      yield parsed.error
        ? { row: parsed.line, email: parsed.email, rejection: { code: parsed.error.code, detail: parsed.error.message } }
        : stagedRow(parsed.line, { user: parsed.user });
    }
    if (!columns) importColumns(undefined, 'the file');
  } catch (error) {
    if (error instanceof AppError) throw error;
    if (error instanceof ImportFileError) throw new AppError('invalid_import_file', error.message);
    if ((error as { code?: string }).code?.startsWith('CSV_')) throw new AppError('invalid_import_file', `The file is not valid CSV: ${(error as Error).message}`);
    throw error;
  }
}
