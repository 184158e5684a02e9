// The dashboard (SPEC.md "Authentication": keys are created and revoked in the dashboard under
// Developers › API Keys; DECISIONS.md §1: the first start prints its address). It is a static page
// in ./public that signs a user in for a bearer token and calls the public API as any client
// would: the server keeps no session for it and it has no API of its own.
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyReply } from 'fastify';
import type { App } from '../platform/http/app.ts';
import { ApiError } from '../platform/http/errors.ts';

const MEDIA_TYPES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'api.js': 'text/javascript; charset=utf-8',
  'style.css': 'text/css; charset=utf-8',
  'icon.svg': 'image/svg+xml',
};

// Only this origin's own files run, and the page can talk only to this origin; no inline script
// or style, so text an API answer holds can never become code on the page.
const HEADERS = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

export async function dashboardRoutes(app: App) {
  const directory = path.join(import.meta.dirname, 'public');
  const files = new Map(Object.entries(MEDIA_TYPES).map(([name, type]) => [name, { type, body: fs.readFileSync(path.join(directory, name)) }]));

  const serve = (name: string, reply: FastifyReply) => {
    const file = files.get(name);
    if (!file) throw new ApiError(404, 'not_found', `The dashboard has no file ${name}`);
    return reply.headers(HEADERS).type(file.type).send(file.body);
  };
  const page = { config: { auth: 'none' as const }, schema: { hide: true }, logLevel: 'warn' as const };

  app.get('/dashboard', { ...page, handler: async (_request, reply) => serve('index.html', reply) });
  app.get<{ Params: { file: string } }>('/dashboard/:file', { ...page, handler: async (request, reply) => serve(request.params.file, reply) });
}
