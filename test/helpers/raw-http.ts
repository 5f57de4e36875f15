import { connect } from 'node:net';

/** What {@link rawRequest} read back: the status code, the lower-cased headers and the body. */
export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/**
 * Sends one HTTP/1.1 request exactly as written (request line untouched: percent-encoding, dot
 * segments and absolute forms reach the server as sent, which `fetch` and `inject` would
 * normalise) to 127.0.0.1:`port` with `Connection: close`, and reads the answer until the server
 * closes (the socket is not half-closed first: Node would abort a request whose client ended).
 */
export function rawRequest(
  port: number,
  method: string,
  target: string,
  headers: Record<string, string>,
  body?: string,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    const fields = { ...headers, connection: 'close', ...(body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) }) };
    const head = Object.entries(fields).map(([name, value]) => `${name}: ${value}\r\n`).join('');
    socket.on('connect', () => socket.write(`${method} ${target} HTTP/1.1\r\n${head}\r\n${body ?? ''}`));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [headText = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...headerLines] = headText.split('\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0);
      const parsed: Record<string, string> = {};
      for (const line of headerLines) {
        const colon = line.indexOf(':');
        parsed[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status, headers: parsed, body: rest.join('\r\n\r\n') });
    });
  });
}
