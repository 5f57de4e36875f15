import { readFileSync } from 'node:fs';
import { SingleBar } from 'cli-progress';
import { parse } from 'csv-parse/sync';
import { UsageError } from './context.ts';
import { ImportFileError, parseImportRecords, type ParsedRow } from '../../sdk/users-csv.ts';

export { importRows, summarize, type ImportSummary, type RowOutcome, type RowReport } from '../../sdk/users-import-rows.ts';

/**
 * Reads an import file (see {@link parseImportRecords} for what it must hold).
 * @throws UsageError when the file cannot be read, is not CSV, or its header is wrong.
 */
export function readImportFile(file: string): ParsedRow[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  let records: Array<{ record: string[]; info: { lines: number } }>;
  try {
    records = parse(text, { bom: true, skip_empty_lines: true, relax_column_count: true, info: true }) as unknown as typeof records;
  } catch (error) {
    throw new UsageError(`${file} is not valid CSV: ${(error as Error).message}`);
  }
  try {
    return parseImportRecords(records.map(({ record, info }) => ({ cells: record, line: info.lines })), file);
  } catch (error) {
    if (error instanceof ImportFileError) throw new UsageError(error.message);
    throw error;
  }
}

/** A progress bar on stderr while rows complete, only when stderr is a terminal. */
export function progressBar(total: number): { tick(): void; stop(): void } {
  if (!process.stderr.isTTY || total === 0) return { tick() {}, stop() {} };
  const bar = new SingleBar({
    stream: process.stderr,
    format: 'importing [{bar}] {percentage}% | {value}/{total} rows | ETA {eta_formatted}',
    hideCursor: true,
    clearOnComplete: true,
  });
  bar.start(total, 0);
  return { tick: () => bar.increment(), stop: () => bar.stop() };
}
