// one backend: postgres: the CLI against a server process, over the HTTP API (scripts/test-backends.ts).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse } from 'csv-parse/sync';
import { createClient, type User } from 'wum/sdk';
import { escapeCell, unescapeCell } from '../../sdk/users-csv.ts';
import { BACKEND } from '../helpers/test-context.ts';
import { startWumServer, type WumServer } from '../../harness/wum-server.ts';
import { runWum } from '../../harness/run-wum.ts';

/** Spreadsheet formulas and their look-alikes (OWASP "CSV Injection" and common payload lists). */
const FORMULAS = [
  '=1+1',
  "=cmd|' /C calc'!A0",
  '=HYPERLINK("http://127.0.0.1/?leak="&A1,"click")',
  '+1+1',
  '-2+3',
  '@SUM(1+1)*cmd|\' /C calc\'!A0',
  '\t=1+1',
  '\r=1+1',
  "'=1+1",
  "''+x",
  '=IMPORTXML(CONCAT("http://127.0.0.1/?",A1),"//a")',
  '--1',
];
/** Values that must stay exactly as they are. */
const PLAIN = ['Ada', "O'Brien", "'quoted", '', 'a=b', 'x+y', '1-2', 'me@example.com', '-', "'-"];

describe(`users CSV against formula injection [${BACKEND}]`, () => {
  test('every formula of the corpus is written with a leading quote and read back to the same value; plain values are untouched', () => {
    for (const value of FORMULAS) {
      assert.ok(escapeCell(value).startsWith("'"), value);
      assert.equal(unescapeCell(escapeCell(value)), value);
    }
    for (const value of PLAIN) {
      assert.equal(escapeCell(value), value);
      assert.equal(unescapeCell(escapeCell(value)), value);
    }
  });

  describe('wum users export and import', () => {
    let server: WumServer;
    let dir: string;
    const keys: Record<string, string> = {};

    before(async () => {
      server = await startWumServer({ RATE_LIMIT_PER_KEY: '0' });
      dir = mkdtempSync(join(tmpdir(), 'wum-csv-'));
      for (const subdomain of ['formulas', 'copy']) {
        const res = await fetch(`${server.adminUrl}/admin/v1/workspaces`, {
          method: 'POST',
          headers: { authorization: `Bearer ${server.adminToken}`, 'content-type': 'application/json' },
          body: JSON.stringify({ subdomain }),
        });
        assert.equal(res.status, 201);
        keys[subdomain] = ((await res.json()) as { api_key: { key: string } }).api_key.key;
      }
    });
    after(async () => {
      await server?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test('no exported cell starts a formula; an import of the export gives the same names and emails', async () => {
      const client = createClient({ baseUrl: server.workspaceUrl('formulas'), apiKey: keys.formulas! });
      for (const [i, value] of FORMULAS.entries()) {
        await client.users.add({ email: i === 0 ? '=1+1@demo.example' : `f${i}@example.com`, role: 'non_owner', apps: [], first_name: value, last_name: value });
      }
      await client.close();
      const env = (subdomain: string) => ({ WUM_URL: server.workspaceUrl(subdomain), WUM_API_KEY: keys[subdomain]! });
      const exported = await runWum(['users', 'export'], env('formulas'));
      assert.equal(exported.code, 0, exported.stderr);
      const records = parse(exported.stdout, { columns: true }) as Array<Record<string, string>>;
      assert.equal(records.length, FORMULAS.length);
      for (const record of records) {
        for (const [column, cell] of Object.entries(record)) assert.doesNotMatch(cell, /^[=+\-@\t\r]/, `${column}: ${JSON.stringify(cell)}`);
      }
      assert.ok(records.some((r) => r.email === "'=1+1@demo.example" && r.first_name === "'=1+1"));
      const file = join(dir, 'formulas.csv');
      writeFileSync(file, exported.stdout);
      const imported = await runWum(['users', 'import', file, '--json'], env('copy'));
      assert.equal(imported.code, 0, imported.stderr);
      const read = async (subdomain: string) => {
        const reader = createClient({ baseUrl: server.workspaceUrl(subdomain), apiKey: keys[subdomain]! });
        const users: User[] = [];
        for await (const user of reader.users.iterate({ status: 'active' })) users.push(user);
        await reader.close();
        return users.map((u) => [u.email, u.first_name, u.last_name]).sort();
      };
      assert.deepEqual(await read('copy'), await read('formulas'));
      assert.ok((await read('copy')).some(([email, first]) => email === '=1+1@demo.example' && first === '=1+1'));
    });
  });
});
