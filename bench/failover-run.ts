/*
 * `npm run bench:failover [-- --quick]`: the failover section of `npm run bench` alone (writes
 * on a pg_auto_failover primary with two synchronous standbys against a single server), in
 * about two minutes. Builds the service first; needs pg_autoctl (Debian package
 * postgresql-15-auto-failover). See bench/failover.ts and docs/operations.md.
 */
import { parseArgs } from 'node:util';
import { measureFailover } from './failover.ts';
import { buildService, startingProdServers, type ServerHandle } from './processes.ts';
import { watchMachineLoad } from './machine-load.ts';
import { renderReport } from './report.ts';

const load = watchMachineLoad();
const { values: args } = parseArgs({ options: { quick: { type: 'boolean', default: false } } });
const seconds = args.quick ? 3 : 10;
const connections = 10;

buildService();
const servers: ServerHandle[] = [];
try {
  const section = await measureFailover({
    env: { RATE_LIMIT_PER_KEY: '0', LOG_LEVEL: 'info' },
    start: startingProdServers(servers),
    connections,
    warmupSeconds: args.quick ? 1 : 2,
    seconds,
    log: (message) => process.stderr.write(`${message}\n`),
  });
  process.stdout.write(`\n${connections} connections, ${seconds} s measured per row; node --max-old-space-size=128; RATE_LIMIT_PER_KEY=0\n\n`);
  process.stdout.write(`${renderReport([section], load)}\n`);
} finally {
  for (const server of servers) await server.stop().catch(() => {});
}
