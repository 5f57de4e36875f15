import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import Fastify from 'fastify';
import { terminalLogStream } from '../../src/server/terminal-log.ts';
import { BACKEND } from '../helpers/test-context.ts';

/** A stdout stand-in that collects what is written to it; `isTTY` as given. */
function fakeStdout(isTTY: boolean): { stdout: NodeJS.WriteStream; text: () => string } {
  const sink = new PassThrough();
  let text = '';
  sink.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return { stdout: Object.assign(sink, { isTTY }) as unknown as NodeJS.WriteStream, text: () => text };
}

test(`logs to a terminal are readable lines, to anything else JSON [${BACKEND}]`, async () => {
  assert.equal(terminalLogStream(fakeStdout(false).stdout), undefined, 'not a terminal: the logger keeps JSON');

  const terminal = fakeStdout(true);
  const stream = terminalLogStream(terminal.stdout);
  assert.ok(stream, 'a terminal gets the pretty stream');
  const app = Fastify({ logger: { level: 'info', stream } });
  app.log.info({ reqId: 'req-1' }, 'Server listening');
  await new Promise((resolve) => setTimeout(resolve, 100));
  const line = terminal.text();
  assert.match(line, /INFO/);
  assert.match(line, /Server listening/);
  assert.doesNotMatch(line, /^\{/, 'not a JSON line');
  await app.close();
});
