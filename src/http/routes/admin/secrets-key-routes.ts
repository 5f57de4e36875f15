import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Store } from '../../../core/ports.ts';
import { jsonResponse, problemResponses } from '../../schemas/common.ts';
import { AUTH, security, tags } from './admin-common.ts';

const PATH = '/secrets-key/rotate';

/** What a rotation did. */
const RotationSchema = Type.Object(
  {
    key_id: Type.String({ description: 'Id of the key every stored secret is now encrypted with: `SECRETS_KEY` (the first 8 hex digits of its SHA-256).' }),
    reencrypted: Type.Integer({ minimum: 0, description: 'Secrets re-encrypted by this call (0 when every one already was).' }),
    undecryptable: Type.Integer({
      minimum: 0,
      description: 'Secrets neither `SECRETS_KEY` nor `SECRETS_KEY_PREVIOUS` decrypts, left as they were; while above 0, keep the key they were written with.',
    }),
  },
  { description: 'The outcome of a rotation of the secrets key.' },
);

/**
 * `POST /admin/v1/secrets-key/rotate` (docs/operations.md, "Rotating the secrets key"):
 * re-encrypts with `SECRETS_KEY` every stored secret not yet encrypted with it, in batches;
 * idempotent (a second call re-encrypts nothing).
 */
export async function secretsKeyRoutes(app: FastifyInstance, options: { store: Store }): Promise<void> {
  const { store } = options;
  app.withTypeProvider<TypeBoxTypeProvider>().post(PATH, {
    schema: {
      operationId: 'rotateSecretsKey',
      summary: 'Re-encrypt every stored secret with the current secrets key',
      description:
        'Run after giving every replica the new key in `SECRETS_KEY` and the old one in `SECRETS_KEY_PREVIOUS`. ' +
        'Webhook signing secrets and identity provider client secrets encrypted with another key are re-encrypted with ' +
        '`SECRETS_KEY`; once `undecryptable` is 0, `SECRETS_KEY_PREVIOUS` is no longer needed. Safe to repeat.',
      tags,
      security,
      response: {
        200: jsonResponse('The secrets re-encrypted.', RotationSchema, { key_id: '3f9a0c1e', reencrypted: 12, undecryptable: 0 }),
        ...problemResponses(...AUTH),
      },
    },
    handler: async (request) => {
      const report = await store.reencryptSecrets('not-current');
      request.log.info({ keyId: report.keyId, reencrypted: report.reencrypted, undecryptable: report.undecryptable }, 'secrets key rotation');
      return { key_id: report.keyId, reencrypted: report.reencrypted, undecryptable: report.undecryptable };
    },
  });
}
