// one backend: pglite: no database; signing is pure computation.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { signDelivery } from '../../src/webhooks/sign.ts';

/*
 * A delivery's signature (docs/api.md, "Events and webhooks": Standard Webhooks) is computed
 * with node:crypto; the official `standardwebhooks` package must accept every one of them and
 * compute the same bytes.
 */
describe('webhook signatures', () => {
  const secrets = [`whsec_${randomBytes(32).toString('base64')}`, `whsec_${randomBytes(24).toString('base64')}`];
  const body = JSON.stringify({ id: 'evt_1', type: 'user.updated', data: { user: { first_name: 'Zoë 😀', last_name: 'Ŧest' } } });
  const at = new Date('2026-11-28T08:00:00.999Z');

  test('one v1 signature per secret, each the one the official package computes, and verified by it', () => {
    const headers = signDelivery('evt_1', at, body, secrets);
    assert.equal(headers['webhook-id'], 'evt_1');
    assert.equal(headers['webhook-timestamp'], String(Math.floor(at.getTime() / 1000)));
    const signatures = headers['webhook-signature'].split(' ');
    assert.deepEqual(signatures, secrets.map((secret) => new Webhook(secret).sign('evt_1', at, body)));
    for (const secret of secrets) {
      // verify() checks the timestamp against now: sign as of now for it.
      const now = new Date();
      const fresh = signDelivery('evt_1', now, body, [secret]);
      assert.deepEqual(new Webhook(secret).verify(body, { ...fresh }), JSON.parse(body));
    }
  });

  test('a secret without its whsec_ prefix signs as the package reads it', () => {
    const bare = secrets[0]!.slice('whsec_'.length);
    assert.equal(signDelivery('m', at, body, [bare])['webhook-signature'], new Webhook(bare).sign('m', at, body));
  });

  test('a changed body, id or timestamp no longer verifies', () => {
    const now = new Date();
    const headers = signDelivery('evt_1', now, body, [secrets[0]!]);
    const webhook = new Webhook(secrets[0]!);
    assert.throws(() => webhook.verify(`${body} `, { ...headers }));
    assert.throws(() => webhook.verify(body, { ...headers, 'webhook-id': 'evt_2' }));
    assert.throws(() => webhook.verify(body, { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 1) }));
  });
});
