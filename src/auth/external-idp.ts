// Bearer tokens from an external identity provider (DECISIONS.md §2), configured by its JWKS
// address, issuer and audience. Such a token names a Corridor user by its email claim; which
// user it becomes, with which roles, is decided by Corridor, never by the provider's claims.
import { createRemoteJWKSet, errors, jwtVerify } from 'jose';
import type { FlattenedJWSInput, JWTHeaderParameters } from 'jose';

export interface IdpSettings {
  jwksUrl: string;
  issuer: string;
  audience: string;
}

// Asymmetric algorithms only: an HMAC token could be forged by anyone holding the public keys.
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

/** The provider's keys could not be fetched: the caller answers auth_failure, never a pass. */
export class IdentityProviderUnavailable extends Error {}

export class ExternalIdentityProvider {
  readonly #settings: IdpSettings;
  readonly #keys: ReturnType<typeof createRemoteJWKSet>;

  constructor(settings: IdpSettings) {
    this.#settings = settings;
    // jose caches the key set and refetches it for an unknown key id at most every 30 s.
    this.#keys = createRemoteJWKSet(new URL(settings.jwksUrl));
  }

  /**
   * The verified email of the token's subject, lowercased; null for any bad token (signature,
   * algorithm, issuer, audience, expiry, or no verified email). Throws IdentityProviderUnavailable
   * when the key set cannot be fetched or read.
   */
  async verifiedEmail(token: string): Promise<string | null> {
    const keys = this.#keys;
    try {
      const { payload } = await jwtVerify(
        token,
        async (header: JWTHeaderParameters, input: FlattenedJWSInput) => {
          try {
            return await keys(header, input);
          } catch (err) {
            // These are the token's fault (a key id or algorithm the provider does not publish);
            // anything else is the key set's: unreachable, not 200, not JSON or not a key set.
            if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys || err instanceof errors.JOSENotSupported) throw err;
            throw new IdentityProviderUnavailable(`identity provider keys unavailable: ${(err as Error).message}`, { cause: err });
          }
        },
        { algorithms: ALGORITHMS, issuer: this.#settings.issuer, audience: this.#settings.audience, requiredClaims: ['exp'] },
      );
      const { email, email_verified: verified } = payload;
      if (typeof email !== 'string' || !email.includes('@')) return null;
      if (verified === false || verified === 'false') return null;
      return email.toLowerCase();
    } catch (err) {
      if (err instanceof IdentityProviderUnavailable) throw err;
      return null;
    }
  }
}
