import { createServer } from 'node:net';

/**
 * Runs `use` with the port of a TCP server on 127.0.0.1 that accepts connections, reads what
 * comes and never answers (a destination that hangs), and closes the server afterwards.
 */
export async function withSilentServer<T>(use: (port: number) => Promise<T>): Promise<T> {
  // Reading keeps each connection flowing, so it ends when the client goes and close() can finish.
  const server = createServer((socket) => socket.resume());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    return await use((server.address() as { port: number }).port);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}
