import { createAdminClient, createClient, type WumAdminClient, type WumClient } from 'wum/sdk';
import { startWumServer, type WumServer } from '../../harness/wum-server.ts';
import { startJsonLinesReceiver, type StreamReceiver } from '../../harness/stream-receivers.ts';

/** The receiver is plain http on 127.0.0.1: allowed only with these (docs/security.md, "Outbound connections"). */
const STREAMS_ENV = { RATE_LIMIT_PER_KEY: '0', WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_TIMEOUT_MS: '2000', OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32' };

/** A server process whose stream worker may send to a JSON Lines receiver on 127.0.0.1, and one workspace's clients. */
export interface StreamsServer {
  readonly server: WumServer;
  readonly receiver: StreamReceiver;
  readonly admin: WumAdminClient;
  /** The workspace's client, with its first key (every scope). */
  readonly wum: WumClient;
  /** `WUM_URL` and `WUM_API_KEY` of the workspace, for `wum`. */
  readonly env: Record<string, string>;
  /** `WUM_ADMIN_URL` and `WUM_ADMIN_TOKEN`, for `wum admin`. */
  readonly adminEnv: Record<string, string>;
  close(): Promise<void>;
}

/**
 * Starts the server (as `npm start` does, on the current backend) and the receiver, puts the
 * product `crm` in the catalogue and creates the workspace `subdomain`, for the SDK's and the
 * CLI's audit stream tests.
 */
export async function startStreamsServer(subdomain: string): Promise<StreamsServer> {
  const [server, receiver] = await Promise.all([startWumServer(STREAMS_ENV), startJsonLinesReceiver()]);
  const admin = createAdminClient({ baseUrl: server.adminUrl, adminToken: server.adminToken });
  await admin.products.put('crm', ['admin', 'member']);
  const created = await admin.workspaces.create({ subdomain });
  const wum = createClient({ baseUrl: server.workspaceUrl(subdomain), apiKey: created.api_key.key });
  return {
    server,
    receiver,
    admin,
    wum,
    env: { WUM_URL: server.workspaceUrl(subdomain), WUM_API_KEY: created.api_key.key },
    adminEnv: { WUM_ADMIN_URL: server.adminUrl, WUM_ADMIN_TOKEN: server.adminToken },
    async close() {
      await admin.close();
      await wum.close();
      await receiver.close();
      await server.stop();
    },
  };
}
