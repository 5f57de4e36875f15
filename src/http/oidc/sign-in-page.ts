import type { FastifyReply } from 'fastify';

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * Answers a refused sign-in with a page a person can read (not JSON: the browser arrived here
 * by a redirect from the identity provider), saying why and linking back to the console.
 */
export function sendRefusal(reply: FastifyReply, status: number, reason: string): FastifyReply {
  const html =
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign-in refused</title></head><body>' +
    `<main><h1>Sign-in refused</h1><p id="reason">${escapeHtml(reason)}</p>` +
    '<p><a href="/console/">Back to the console</a></p></main></body></html>';
  return reply.code(status).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(html);
}
