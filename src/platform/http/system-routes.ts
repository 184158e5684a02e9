// Unauthenticated operational endpoints: health, metrics and the OpenAPI document.
import { Type } from 'typebox';
import type { App } from './app.ts';
import type { Metrics } from './metrics.ts';

export async function systemRoutes(app: App, deps: { ping: () => Promise<void>; engine: string; metrics: Metrics }) {
  const Health = Type.Object({
    status: Type.Union([Type.Literal('ok'), Type.Literal('unavailable')]),
    database: Type.Union([Type.Literal('ok'), Type.Literal('unreachable')]),
    engine: Type.String(),
  });

  app.get('/health', {
    config: { auth: 'none' },
    schema: { operationId: 'getHealth', tags: ['Operations'], summary: 'Liveness and database reachability', response: { 200: Health, 503: Health } },
    logLevel: 'warn',
    handler: async (_request, reply) => {
      try {
        await withTimeout(deps.ping(), 2000);
        return { status: 'ok' as const, database: 'ok' as const, engine: deps.engine };
      } catch {
        return reply.code(503).send({ status: 'unavailable' as const, database: 'unreachable' as const, engine: deps.engine });
      }
    },
  });

  app.get('/metrics', {
    config: { auth: 'none' },
    schema: {
      operationId: 'getMetrics',
      tags: ['Operations'],
      summary: 'Prometheus metrics',
      response: { 200: { description: 'Prometheus text exposition format 0.0.4', content: { 'text/plain': { schema: { type: 'string' } } } } },
    },
    logLevel: 'warn',
    handler: async (_request, reply) => {
      reply.header('content-type', deps.metrics.registry.contentType);
      return deps.metrics.registry.metrics();
    },
  });

  app.get('/v1/openapi.json', {
    config: { auth: 'none' },
    schema: {
      operationId: 'getOpenApiDocument',
      tags: ['Operations'],
      summary: 'This OpenAPI 3.1 document',
      response: { 200: Type.Object({ openapi: Type.String() }, { additionalProperties: true, description: 'An OpenAPI 3.1 document' }) },
    },
    handler: async () => app.swagger() as { openapi: string },
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timeout')), ms);
    promise.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
