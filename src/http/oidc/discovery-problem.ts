import { AppError } from '../../core/errors.ts';
import type { IdentityProviderCheck } from '../../core/identity-providers/identity-providers-service.ts';
import { OutboundRefusedError } from '../../outbound/outbound-guard.ts';
import type { RelyingParty } from './relying-party.ts';

/**
 * What went wrong discovering an identity provider: the configuration itself (`invalid_url`,
 * `http_refused`, `address_refused`: it can never work under this server's outbound policy) or
 * the provider (`unreachable`, `discovery_invalid`, `issuer_mismatch`: it may work later).
 */
export type DiscoveryProblem = 'invalid_url' | 'http_refused' | 'address_refused' | 'unreachable' | 'discovery_invalid' | 'issuer_mismatch';

/** The openid-client codes of an answer that is not a usable discovery document. */
const INVALID_DOCUMENT = new Set([
  'OAUTH_RESPONSE_IS_NOT_CONFORM',
  'OAUTH_RESPONSE_IS_NOT_JSON',
  'OAUTH_PARSE_ERROR',
  'OAUTH_INVALID_RESPONSE',
  'OAUTH_INVALID_SERVER_METADATA',
  'OAUTH_MISSING_SERVER_METADATA',
]);

/** The errors of `error`'s cause chain, outermost first (at most 8). */
function chainOf(error: unknown): Array<{ code?: unknown; message?: unknown; cause?: unknown }> {
  const chain = [];
  for (let e = error as { cause?: unknown } | undefined; e && typeof e === 'object' && chain.length < 8; e = e.cause as typeof e) chain.push(e);
  return chain;
}

/**
 * Classifies an error of `discoverProvider` (relying-party.ts): a refusal of the outbound guard
 * anywhere in its causes by its kind, openid-client's issuer comparison as `issuer_mismatch`,
 * its response checks as `discovery_invalid`, anything else (refused connection, DNS, timeout,
 * TLS) as `unreachable`. Returns the problem and a message for the operator.
 */
export function discoveryProblem(error: unknown): { problem: DiscoveryProblem; message: string } {
  const chain = chainOf(error);
  const refused = chain.find((e): e is OutboundRefusedError => e instanceof OutboundRefusedError);
  if (refused) {
    const problem = ({ url: 'invalid_url', http: 'http_refused', address: 'address_refused', redirect: 'discovery_invalid' } as const)[refused.kind];
    return { problem, message: refused.message };
  }
  const message = chain.map((e) => e.message).filter((m): m is string => typeof m === 'string' && m !== '').join(': ') || String(error);
  const codes = chain.map((e) => e.code);
  if (codes.includes('OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED')) return { problem: 'issuer_mismatch', message };
  if (codes.some((code) => typeof code === 'string' && INVALID_DOCUMENT.has(code))) return { problem: 'discovery_invalid', message };
  return { problem: 'unreachable', message };
}

/**
 * The `IdentityProviderCheck` of the admin API (docs/api.md, "Identity provider"): the issuer
 * must parse, and its discovery by `relyingParty` must succeed now, before anything is stored.
 * @throws AppError `validation_failed` (400, field `issuer`: not an absolute https/http URL
 * without credentials), `identity_provider_http_refused`, `identity_provider_address_refused`,
 * `identity_provider_unreachable`, `identity_provider_discovery_invalid`,
 * `identity_provider_issuer_mismatch` (422 each).
 */
export function identityProviderCheck(relyingParty: Pick<RelyingParty, 'discover'>): IdentityProviderCheck {
  return async (config) => {
    try {
      await relyingParty.discover({ ...config, clientSecret: () => config.clientSecret });
    } catch (error) {
      const { problem, message } = discoveryProblem(error);
      if (problem === 'invalid_url') {
        throw new AppError('validation_failed', `The issuer is not usable: ${message}.`, [{ field: 'issuer', message }]);
      }
      throw new AppError(`identity_provider_${problem}`, `The identity provider at ${config.issuer} cannot be used: ${message}.`);
    }
  };
}
