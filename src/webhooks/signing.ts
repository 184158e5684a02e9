// Standard Webhooks signatures (https://www.standardwebhooks.com): the secret is whsec_ + base64
// of random bytes, and each signature is v1,base64(HMAC-SHA256(secret, "id.timestamp.body")).
// The signing itself is the reference library's, so receivers using it verify what we send.
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

export const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;

export function newSigningSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/**
 * The three Standard Webhooks headers for one attempt. With several secrets (during a rotation
 * overlap) the signature header lists one signature per secret, space-separated, newest first.
 */
export function signedHeaders(secrets: string[], messageId: string, at: Date, body: string): Record<string, string> {
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((s) => new Webhook(s).sign(messageId, at, body)).join(' '),
  };
}
