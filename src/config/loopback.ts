/**
 * True for a URL on this machine's loopback (`127.0.0.1`, `[::1]`, `localhost`): the only place
 * an OpenID Provider may be reached over plain http (tests, local development).
 */
export function isLoopbackUrl(url: URL): boolean {
  return url.hostname === '127.0.0.1' || url.hostname === '[::1]' || url.hostname === 'localhost';
}
