// The optional plain-HTTP listener. It serves nothing: every request gets 400 https_required,
// except requests a trusted TLS-terminating proxy forwarded with X-Forwarded-Proto: https,
// which are handed to the real application.
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { trustedProxyMatcher } from './trusted-proxies.ts';

export function createPlainListener(trustedProxies: string[], route: (req: IncomingMessage, res: ServerResponse) => void): http.Server {
  const trusted = trustedProxyMatcher(trustedProxies);
  return http.createServer((req, res) => {
    const forwardedProto = String(req.headers['x-forwarded-proto'] ?? '').split(',')[0]!.trim().toLowerCase();
    if (forwardedProto === 'https' && trusted(req.socket.remoteAddress)) {
      route(req, res);
      return;
    }
    const body = JSON.stringify({ code: 'https_required', message: 'This API is served over HTTPS only; repeat the request with https://' });
    res.writeHead(400, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' });
    res.end(body);
    // Drain whatever body was sent so the client sees the answer rather than a reset.
    req.resume();
  });
}
