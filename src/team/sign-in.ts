import { createRemoteJWKSet, errors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { SCOPES, SIGN_IN_SCOPE_PREFIX, type Scope } from '../shared/team-requests.ts';
import type { SignIn } from './team-document.ts';

/** What a verified access token says: whose it is, what it lets them do, and its id for the audit log. */
export interface SignedIn {
  subject: string;
  scopes: Scope[];
  tokenId: string;
}

/** Why an access token is refused, in the words of RFC 6750's `error_description`. */
export class SignInRefused extends Error {}

/** Whether `credential` has the shape of a JWT (a key or the server's token never has). */
export function isJwt(credential: string): boolean {
  return /^ey[\w-]+\.ey[\w-]+\.[\w-]+$/.test(credential);
}

/**
 * Checks the access tokens a team's identity provider issues for this server: signed by a key its
 * discovery document names, issued by it, for this server (the audience, RFC 8707's resource),
 * unexpired. The provider's keys are fetched once and again when a token names one not seen.
 */
export class SignInVerifier {
  readonly #keys = new Map<string, Promise<JWTVerifyGetKey>>();

  async verify(token: string, settings: SignIn): Promise<SignedIn> {
    const keys = await this.#keysOf(settings.issuer);
    try {
      const { payload } = await jwtVerify(token, keys, { issuer: settings.issuer, audience: settings.resource, requiredClaims: ['exp', 'sub'] });
      const granted = typeof payload.scope === 'string' ? payload.scope.split(' ') : [];
      const scopes = SCOPES.filter((scope) => granted.includes(SIGN_IN_SCOPE_PREFIX + scope));
      return { subject: payload.sub!, scopes, tokenId: typeof payload.jti === 'string' ? payload.jti : 'no id' };
    } catch (error) {
      if (error instanceof errors.JWTExpired) throw new SignInRefused('The access token has expired');
      if (error instanceof errors.JWTClaimValidationFailed)
        throw new SignInRefused(`The access token's ${error.claim} claim is not this server's (${error.reason})`);
      if (error instanceof errors.JOSEError) throw new SignInRefused(`The access token is not valid: ${error.message}`);
      throw error;
    }
  }

  #keysOf(issuer: string): Promise<JWTVerifyGetKey> {
    let keys = this.#keys.get(issuer);
    if (!keys) {
      keys = discoverKeys(issuer);
      // A provider that could not be reached is asked again at the next token.
      keys.catch(() => this.#keys.delete(issuer));
      this.#keys.set(issuer, keys);
    }
    return keys;
  }
}

async function discoverKeys(issuer: string): Promise<JWTVerifyGetKey> {
  const base = issuer.replace(/\/$/, '');
  for (const document of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
    const response = await fetch(base + document, { signal: AbortSignal.timeout(10_000) }).catch(() => undefined);
    if (!response?.ok) continue;
    const metadata = (await response.json()) as { jwks_uri?: unknown; issuer?: unknown };
    if (metadata.issuer !== issuer || typeof metadata.jwks_uri !== 'string') continue;
    return createRemoteJWKSet(new URL(metadata.jwks_uri));
  }
  throw new SignInRefused(`The team's identity provider ${issuer} could not be reached or names no keys`);
}
