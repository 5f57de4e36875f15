import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createClient } from 'wum/sdk';
import { freePort } from '../../harness/postgres-cluster.ts';
import { SERVER_ARGS, REPO_ROOT, spawnServer, waitForDemoKey, type ServerProcess } from '../../harness/server-process.ts';
import { ADMIN_TOKEN, BACKEND } from '../helpers/test-context.ts';
import { startOpenIdProvider, type TestOpenIdProvider } from '../helpers/oidc-provider.ts';

const TIMEOUT = { timeout: 180_000 };

/** The fenced blocks of `language` in the README section that starts with `heading`. */
function blocks(readme: string, heading: string, language: string): string[] {
  const start = readme.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `README has ${heading}`);
  const end = readme.indexOf('\n## ', start + heading.length + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(new RegExp('```' + language + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]!);
}

/** Runs `command` with `file` and arguments; resolves with its exit code and output. */
function run(file: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(file, args, { ...options, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
    });
  });
}

// The README's quick start is the embedded database with its demo workspace: run once, on PGlite.
if (BACKEND === 'pglite') {
  describe('the README: CLI and SDK examples work as written against the quick start', () => {
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
    let server: ServerProcess;
    let dir: string;
    let port: number;
    let env: NodeJS.ProcessEnv;
    /** An OpenID Provider on loopback, standing in for the README's: saving one discovers it. */
    let op: TestOpenIdProvider;
    /** The README's addresses (port 3000, the example provider) with this test's. */
    const onPort = (text: string) => text.replaceAll('localhost:3000', `localhost:${port}`).replaceAll('https://login.acme.example', op.issuer);

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
      // `npx wum` as in this directory after `npm install`, without npm's start-up time.
      const bin = join(dir, 'bin');
      mkdirSync(bin);
      writeFileSync(
        join(bin, 'npx'),
        `#!/bin/sh\n[ "$1" = wum ] || { echo "unexpected: npx $*" >&2; exit 127; }\nshift\nexec "${process.execPath}" "${join(REPO_ROOT, 'bin/wum.js')}" "$@"\n`,
      );
      chmodSync(join(bin, 'npx'), 0o755);
      env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, WUM_API_KEY: apiKey, ADMIN_TOKEN };
      for (const name of ['WUM_URL', 'WUM_ADMIN_URL', 'WUM_ADMIN_TOKEN']) delete env[name];
    }, TIMEOUT);
    after(async () => {
      await op?.close();
      server?.kill();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test('## CLI: every shell block after the install block runs with exit code 0', TIMEOUT, async () => {
      const [install, ...examples] = blocks(readme, '## CLI', 'sh');
      assert.match(install!, /npx wum --help/);
      assert.equal(examples.length, 2);
      for (const block of examples) {
        const result = await run('sh', ['-e', '-c', onPort(block)], { cwd: dir, env });
        assert.equal(result.code, 0, `${block}\n--- stdout ---\n${result.stdout}\n--- stderr ---\n${result.stderr}`);
      }
      const exported = readFileSync(join(dir, 'users.csv'), 'utf8');
      assert.match(exported, /^email,role,first_name,last_name,apps,expires_at$/m);
      assert.match(exported, /^alan@example\.com,non_owner,Alan,Turing,crm:admin,$/m);
      assert.match(exported, /^katherine@example\.com,non_owner,Katherine,Johnson,crm:member;analytics:viewer,$/m);
      assert.match(exported, /^linus@example\.com,non_owner,Linus,-,helpdesk:agent,$/m);
    });

    test('## SDK: the TypeScript example runs where the package is installed', TIMEOUT, async () => {
      const [example] = blocks(readme, '## SDK', 'ts');
      assert.ok(example);
      const project = join(dir, 'project');
      mkdirSync(join(project, 'node_modules'), { recursive: true });
      symlinkSync(REPO_ROOT, join(project, 'node_modules', 'wum'), 'dir');
      writeFileSync(join(project, 'example.mts'), onPort(example));
      const tsx = import.meta.resolve('tsx');
      const first = await run(process.execPath, ['--import', tsx, 'example.mts'], { cwd: project, env });
      assert.equal(first.code, 0, first.stderr);
      assert.match(first.stdout, /^added grace@example\.com$/m);
      assert.match(first.stdout, /^grace@example\.com active$/m);
      const again = await run(process.execPath, ['--import', tsx, 'example.mts'], { cwd: project, env });
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /^409 user_already_exists: .* \(request \S+\)$/m);
    });

    test('## SDK: the webhook example creates an endpoint and verifies a delivery with standardwebhooks', TIMEOUT, async () => {
      const [, example] = blocks(readme, '## SDK', 'ts');
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
      writeFileSync(join(project, 'webhook.mts'), onPort(example));
      const result = await run(process.execPath, ['--import', import.meta.resolve('tsx'), 'webhook.mts'], { cwd: project, env });
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /^verified user\.created hook-\d+@example\.com$/m);
    });

    test('### The external API: the curl block runs as written, and leaves what it says', TIMEOUT, async () => {
      const [block] = blocks(readme, '### The external API (per workspace, `X-Api-Key`)', 'sh');
      assert.ok(block);
      const result = await run('sh', ['-e', '-c', onPort(block)], { cwd: dir, env });
      assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
      const wum = createClient({ baseUrl: `http://demo.localhost:${port}`, apiKey: env.WUM_API_KEY! });
      const ada = await wum.users.get('ada@example.com').finally(() => wum.close());
      assert.equal(ada.first_name, 'Augusta Ada', 'the If-Match PATCH applied');
      assert.equal(ada.last_name, 'King');
      assert.equal(ada.status, 'active', 'reactivated at the end');
      assert.match(result.stdout, /"email":"contractor@example\.com"[^}]*"expires_at":"2030-06-30T17:00:00\.000Z"/, 'the expiring user was added and found');
      assert.match(result.stdout, /"users":\[\{"id":"[^"]+","email":"ada@example\.com"/, 'the search found Ada');
      assert.match(result.stdout, /"audit_events":\[\{/, 'the history was listed');
      assert.doesNotMatch(result.stdout, /precondition_failed/);
    });
  });
}
