// Structured JSON logs. Anything that can carry a credential is redacted by path, and request
// bodies are never logged, so passwords, tokens, API keys and webhook secrets cannot leak here.
import pino from 'pino';
import type { DestinationStream, LoggerOptions } from 'pino';

export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  '*.password',
  '*.secret',
  '*.accessToken',
  '*.token',
  '*.apiKey',
  '*.privateKey',
  '*.private_jwk',
  '*.secret_hash',
  '*.password_hash',
  '*.databaseUrl',
  '*.opsPassword',
];

export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    base: { service: 'corridor' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    serializers: {
      // The embedded database attaches a failed statement's parameters to its error, and they
      // can hold what is being written: a new webhook secret, a password hash. The SQL text
      // stays (it has placeholders, not values).
      err(err: Error) {
        const out = pino.stdSerializers.err(err) as Record<string, unknown>;
        delete out.params;
        return out;
      },
      req(req: { id: string; method: string; url: string; headers: Record<string, unknown>; ip?: string }) {
        return {
          id: req.id,
          method: req.method,
          // Query strings can carry signed download tokens; keep only the path.
          url: String(req.url).split('?')[0],
          headers: { ...req.headers },
          remoteAddress: req.ip,
        };
      },
    },
  };
}

export function createLogger(level: string, destination?: DestinationStream) {
  return destination ? pino(loggerOptions(level), destination) : pino(loggerOptions(level));
}
export type Logger = pino.Logger;
