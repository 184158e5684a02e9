// User access tokens: short-lived JWTs signed with an Ed25519 key kept in the database, so every
// process of one deployment signs and verifies with the same keys. Only EdDSA is accepted, which
// rules out alg:none and HMAC tokens forged with the public key.
import { randomUUID } from 'node:crypto';
import { SignJWT, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, jwtVerify } from 'jose';
import type { CryptoKey, JWK, JWTHeaderParameters } from 'jose';
import type { AuthRepository } from './repository.ts';

export const ACCESS_TOKEN_TTL_SECONDS = 15 * 60;
const ALGORITHM = 'EdDSA';
const AUDIENCE = 'corridor-api';
const RELOAD_INTERVAL_MS = 10_000;

export interface AccessClaims {
  userId: string;
  organizationId: string;
}

interface LoadedKey {
  kid: string;
  publicJwk: JWK;
  publicKey: CryptoKey;
  privateKey: CryptoKey;
}

export class TokenIssuer {
  readonly #repo: AuthRepository;
  readonly #issuer: string;
  #keys: LoadedKey[] = [];
  #loadedAt = 0;

  constructor(repo: AuthRepository, environment: string) {
    this.#repo = repo;
    this.#issuer = `corridor:${environment}`;
  }

  /**
   * Loads the signing keys, creating the first one on an empty store. Processes sharing a
   * PostgreSQL database start together without each creating its own first key.
   */
  async init(): Promise<void> {
    const rows = await this.#repo.withStartupLock('signingKeys', async (trx) => {
      const existing = await this.#repo.activeSigningKeys(trx);
      if (existing.length) return existing;
      const { publicKey, privateKey } = await generateKeyPair(ALGORITHM, { crv: 'Ed25519', extractable: true });
      const kid = randomUUID();
      await this.#repo.insertSigningKey({ kid, algorithm: ALGORITHM, public_jwk: { ...(await exportJWK(publicKey)), kid, alg: ALGORITHM, use: 'sig' }, private_jwk: { ...(await exportJWK(privateKey)), kid } }, trx);
      return this.#repo.activeSigningKeys(trx);
    });
    // #loadedAt stays 0: the first unknown key id after start may reload at once.
    await this.#load(rows);
  }

  async #load(rows: Awaited<ReturnType<AuthRepository['activeSigningKeys']>>): Promise<void> {
    this.#keys = await Promise.all(
      rows.map(async (r) => ({
        kid: r.kid,
        publicJwk: r.public_jwk,
        publicKey: (await importJWK(r.public_jwk as JWK, ALGORITHM)) as CryptoKey,
        privateKey: (await importJWK(r.private_jwk as JWK, ALGORITHM)) as CryptoKey,
      })),
    );
  }

  jwks(): { keys: Array<{ kty: string; crv: string; x: string; kid: string; alg: string; use: string }> } {
    return { keys: this.#keys.map((k) => ({ kty: String(k.publicJwk.kty), crv: String(k.publicJwk.crv), x: String(k.publicJwk.x), kid: k.kid, alg: ALGORITHM, use: 'sig' })) };
  }

  async issue(claims: AccessClaims): Promise<string> {
    const key = this.#keys[0];
    if (!key) throw new Error('signing keys not loaded');
    return new SignJWT({ org: claims.organizationId })
      .setProtectedHeader({ alg: ALGORITHM, kid: key.kid, typ: 'JWT' })
      .setSubject(claims.userId)
      .setIssuer(this.#issuer)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setJti(randomUUID())
      .setExpirationTime(`${ACCESS_TOKEN_TTL_SECONDS}s`)
      .sign(key.privateKey);
  }

  /**
   * Whether the token says this deployment issued it. Unverified: it only picks the verifier, so
   * another issuer's token is checked against that issuer's keys and never reloads ours.
   */
  claimsToBeOurs(token: string): boolean {
    try {
      return decodeJwt(token).iss === this.#issuer;
    } catch {
      return false;
    }
  }

  /**
   * Verifies signature, algorithm, issuer, audience and expiry; returns null for any bad token.
   * A key id this process does not know may be one another process added: the keys are reloaded,
   * at most every RELOAD_INTERVAL_MS (a database error here propagates: auth_failure, not a pass).
   */
  async verify(token: string): Promise<AccessClaims | null> {
    let kid: string | undefined;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      return null;
    }
    if (typeof kid === 'string' && !this.#keys.some((k) => k.kid === kid) && Date.now() - this.#loadedAt > RELOAD_INTERVAL_MS) {
      this.#loadedAt = Date.now();
      await this.#load(await this.#repo.activeSigningKeys());
    }
    try {
      const { payload } = await jwtVerify(
        token,
        async (header: JWTHeaderParameters) => {
          const key = this.#keys.find((k) => k.kid === header.kid);
          if (!key) throw new Error('unknown key id');
          return key.publicKey;
        },
        { algorithms: [ALGORITHM], issuer: this.#issuer, audience: AUDIENCE, requiredClaims: ['sub', 'exp', 'iat'] },
      );
      if (typeof payload.sub !== 'string' || typeof payload.org !== 'string') return null;
      return { userId: payload.sub, organizationId: payload.org };
    } catch {
      return null;
    }
  }
}
