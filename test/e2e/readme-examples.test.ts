// one backend: pglite: the README's quick start, which runs on the embedded store (scripts/test-backends.ts).
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createClient } from 'wum/sdk';
import { freePort } from '../../harness/free-port.ts';
import { SERVER_ARGS, REPO_ROOT, spawnServer, waitForDemoKey, type ServerProcess } from '../../harness/server-process.ts';
import { ADMIN_TOKEN, BACKEND } from '../helpers/test-context.ts';
import { startOpenIdProvider, type TestOpenIdProvider } from '../helpers/oidc-provider.ts';

const TIMEOUT = { timeout: 180_000 };

/** A fenced block of the README, with the `##`/`###` heading it is under. */
interface Block {
  readonly section: string;
  readonly language: string;
  readonly code: string;
}

/** Every fenced block of `markdown`, in order, each with the last heading above it. */
function fencedBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  let section = '';
  let open: { language: string; lines: string[] } | undefined;
  for (const line of markdown.split('\n')) {
    if (open) {
      if (line.startsWith('```')) {
        blocks.push({ section, language: open.language, code: open.lines.join('\n') });
        open = undefined;
      } else open.lines.push(line);
    } else if (line.startsWith('```')) open = { language: line.slice(3).trim(), lines: [] };
    else if (/^#{2,3} /.test(line)) section = line;
  }
  return blocks;
}

/** The README's examples to try against the quick start: from "## Quick start" up to "## Test". */
function quickStartBlocks(readme: string): Block[] {
  const start = readme.indexOf('\n## Quick start\n');
  const end = readme.indexOf('\n## Test\n');
  assert.ok(start >= 0 && end > start, 'the README has "## Quick start" and then "## Test"');
  return fencedBlocks(readme.slice(start, end));
}

/** A block a reader runs to install or start the server, which the test does itself. */
const startsTheServer = (block: Block) => /\bnpm (install|start|link)\b/.test(block.code);

/**
 * The status a block's comments show it answers (its example of a problem,
 * `"status":422`); undefined for a block that only succeeds.
 */
function shownStatus(code: string): number | undefined {
  const comments = code.split('\n').filter((line) => line.trimStart().startsWith('#'));
  const status = /"status":(\d{3})/.exec(comments.join('\n'))?.[1];
  return status ? Number(status) : undefined;
}

/** Runs `file` with arguments; resolves with its exit code and output. */
function run(file: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(file, args, { ...options, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
    });
  });
}

/** What the `curl` on the test's PATH adds: each answer's status on stderr, after the block's marker. */
const STATUS_LINE = /^@status (\d{3})$/;
const BLOCK_LINE = /^@block (\d+)$/;

/*
 * The README's examples, run as a reader runs them, top to bottom against the quick start's
 * server: the shell blocks of each section in one bash (set -e), with the `WUM_API_KEY` of the
 * demo key file and the `ADMIN_TOKEN` the README has the reader export, each curl's answer
 * checked (2xx, or the status the block's comment shows), then the SDK's TypeScript. The blocks
 * that install or start the server are the test's to do. The README's quick start is the
 * embedded database with its demo workspace: run once, on PGlite.
 */
if (BACKEND === 'pglite') {
  describe('the README: its examples run top to bottom against the quick start', () => {
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
    const blocks = quickStartBlocks(readme);
    const shellBlocks = blocks.filter((block) => block.language === 'sh');
    /** The shell blocks to run, by section, in the README's order. */
    const sections = new Map<string, Block[]>();
    for (const block of shellBlocks.filter((b) => !startsTheServer(b))) sections.set(block.section, [...(sections.get(block.section) ?? []), block]);

    let server: ServerProcess;
    let dir: string;
    let port: number;
    let env: NodeJS.ProcessEnv;
    /** An OpenID Provider on loopback, standing in for the README's: saving one discovers it. */
    let op: TestOpenIdProvider;
    /** The README's addresses (port 3000, the example provider) with this test's. */
    const onPort = (text: string) => text.replaceAll('localhost:3000', `localhost:${port}`).replaceAll('https://login.acme.example', op.issuer);
    const demo = () => createClient({ baseUrl: `http://demo.localhost:${port}`, apiKey: env.WUM_API_KEY! });

    /** What to check once a section's blocks ran, beyond their exit code and statuses. */
    const afterSection: Record<string, (stdout: string) => Promise<void>> = {
      '### The external API (per workspace, `X-Api-Key`)': async (stdout) => {
        const wum = demo();
        const ada = await wum.users.get('ada@example.com').finally(() => wum.close());
        assert.equal(ada.first_name, 'Augusta Ada', 'the If-Match PATCH applied');
        assert.equal(ada.last_name, 'King');
        assert.equal(ada.status, 'active', 'reactivated at the end');
        assert.match(stdout, /"email":"contractor@example\.com"[^}]*"expires_at":"2030-06-30T17:00:00\.000Z"/, 'the expiring user was added and found');
        assert.match(stdout, /"users":\[\{"id":"[^"]+","email":"ada@example\.com"/, 'the search found Ada');
        assert.match(stdout, /"audit_events":\[\{/, 'the history was listed');
        assert.match(stdout, /"code":"unknown_product_role"/, 'the error example answers its problem');
      },
      '### SCIM 2.0 (`/scim/v2`, `Authorization: Bearer <API key>`)': async () => {
        const wum = demo();
        const hedy = await wum.users.get('hedy@example.com').finally(() => wum.close());
        assert.deepEqual(hedy.apps, [{ name: 'crm', role: 'admin' }]);
      },
      '## CLI': async () => {
        const exported = readFileSync(join(dir, 'users.csv'), 'utf8');
        assert.match(exported, /^email,role,first_name,last_name,apps,expires_at$/m);
        assert.match(exported, /^alan@example\.com,non_owner,Alan,Turing,crm:admin,$/m);
        assert.match(exported, /^katherine@example\.com,non_owner,Katherine,Johnson,crm:member;analytics:viewer,$/m);
        assert.match(exported, /^linus@example\.com,non_owner,Linus,-,helpdesk:agent,$/m);
      },
    };

    before(async () => {
      op = await startOpenIdProvider([]);
      dir = mkdtempSync(join(tmpdir(), 'wum-readme-'));
      port = await freePort();
      server = spawnServer(process.execPath, SERVER_ARGS, {
        PORT: String(port),
        DATA_DIR: join(dir, 'data'),
        ADMIN_TOKEN,
        LOG_LEVEL: 'warn',
        // The SDK's webhook example receives on loopback.
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_POLL_INTERVAL_MS: '50',
      });
      // Not a terminal: the banner is in a file of DATA_DIR (on a terminal the README's lines are printed).
      const apiKey = await waitForDemoKey(server, join(dir, 'data'), 60_000);
      const bin = join(dir, 'bin');
      mkdirSync(bin);
      // `npx wum` as in this directory after `npm install`, without npm's start-up time.
      writeFileSync(
        join(bin, 'npx'),
        `#!/bin/sh\n[ "$1" = wum ] || { echo "unexpected: npx $*" >&2; exit 127; }\nshift\nexec "${process.execPath}" "${join(REPO_ROOT, 'bin/wum.js')}" "$@"\n`,
      );
      // curl as the reader has it, telling the test each answer's status (on stderr, which no example reads).
      const curl = execFileSync('sh', ['-c', 'command -v curl'], { encoding: 'utf8' }).trim();
      writeFileSync(join(bin, 'curl'), `#!/bin/sh\nexec "${curl}" -w '%{stderr}@status %{http_code}\\n' "$@"\n`);
      for (const name of ['npx', 'curl']) chmodSync(join(bin, name), 0o755);
      env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, WUM_API_KEY: apiKey, ADMIN_TOKEN };
      for (const name of ['WUM_URL', 'WUM_ADMIN_URL', 'WUM_ADMIN_TOKEN']) delete env[name];
    }, TIMEOUT);
    after(async () => {
      await op?.close();
      server?.kill();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test('every shell block is run here, but those that install or start the server', () => {
      const skipped = shellBlocks.filter(startsTheServer).map((b) => b.section);
      assert.deepEqual(skipped, ['## Quick start', '### The operator API (`/admin/v1`, `Authorization: Bearer $ADMIN_TOKEN`)', '## CLI']);
      assert.deepEqual([...sections.keys()], [
        '### The external API (per workspace, `X-Api-Key`)',
        '### SCIM 2.0 (`/scim/v2`, `Authorization: Bearer <API key>`)',
        '### Operations endpoints (any host, no key)',
        '### The operator API (`/admin/v1`, `Authorization: Bearer $ADMIN_TOKEN`)',
        '## CLI',
      ]);
    });

    for (const [section, sectionBlocks] of sections) {
      test(`${section}: its shell blocks run in one shell, each request answered 2xx (or the status its comment shows)`, TIMEOUT, async () => {
        const script = ['set -e', ...sectionBlocks.map((block, i) => `echo "@block ${i}" >&2\n${onPort(block.code)}`)].join('\n');
        const result = await run('bash', ['-c', script], { cwd: dir, env });
        assert.equal(result.code, 0, `${section}\n--- stdout ---\n${result.stdout}\n--- stderr ---\n${result.stderr}`);
        // The statuses each block's requests got, by block.
        const statuses: number[][] = sectionBlocks.map(() => []);
        let current = -1;
        for (const line of result.stderr.split('\n')) {
          const marker = BLOCK_LINE.exec(line);
          if (marker) current = Number(marker[1]);
          const status = STATUS_LINE.exec(line);
          if (status) statuses[current]!.push(Number(status[1]));
        }
        sectionBlocks.forEach((block, i) => {
          const expected = shownStatus(block.code);
          for (const status of statuses[i]!) {
            if (expected === undefined) assert.ok(status >= 200 && status < 300, `a request of this block answered ${status}:\n${block.code}\n--- stdout ---\n${result.stdout}`);
            else assert.equal(status, expected, `the block shows ${expected}:\n${block.code}`);
          }
        });
        await afterSection[section]?.(result.stdout);
      });
    }

    test('## SDK: the TypeScript example runs where the package is installed', TIMEOUT, async () => {
      const [example] = blocks.filter((b) => b.section === '## SDK' && b.language === 'ts');
      assert.ok(example);
      const project = join(dir, 'project');
      mkdirSync(join(project, 'node_modules'), { recursive: true });
      symlinkSync(REPO_ROOT, join(project, 'node_modules', 'wum'), 'dir');
      writeFileSync(join(project, 'example.mts'), onPort(example.code));
      const tsx = import.meta.resolve('tsx');
      const first = await run(process.execPath, ['--import', tsx, 'example.mts'], { cwd: project, env });
      assert.equal(first.code, 0, first.stderr);
      assert.match(first.stdout, /^added margaret@example\.com$/m, 'no earlier example added this email');
      assert.match(first.stdout, /^margaret@example\.com active$/m);
      const again = await run(process.execPath, ['--import', tsx, 'example.mts'], { cwd: project, env });
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /^409 user_already_exists: .* \(request \S+\)$/m);
    });

    test('## SDK: the webhook example creates an endpoint and verifies a delivery with standardwebhooks', TIMEOUT, async () => {
      const [, example] = blocks.filter((b) => b.section === '## SDK' && b.language === 'ts');
      assert.ok(example);
      const project = join(dir, 'project');
      mkdirSync(join(project, 'node_modules'), { recursive: true });
      for (const name of ['wum', 'standardwebhooks']) {
        const target = name === 'wum' ? REPO_ROOT : join(REPO_ROOT, 'node_modules', name);
        try {
          symlinkSync(target, join(project, 'node_modules', name), 'dir');
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        }
      }
      writeFileSync(join(project, 'webhook.mts'), onPort(example.code));
      const result = await run(process.execPath, ['--import', import.meta.resolve('tsx'), 'webhook.mts'], { cwd: project, env });
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /^verified user\.created hook-\d+@example\.com$/m);
    });
  });
}
