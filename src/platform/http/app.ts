// The HTTP shell every domain's routes plug into: validation, error shape, request ids,
// unknown routes and wrong methods, metrics and the OpenAPI document.
import { isUtf8 } from 'node:buffer';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest, RawServerDefault } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import swagger from '@fastify/swagger';
import FindMyWay from 'find-my-way';
import type { Logger } from '../logger.ts';
import { ApiError } from './errors.ts';
import { schemaValidationError, validatorCompiler } from './validation.ts';
import { createMetrics } from './metrics.ts';
import type { Metrics } from './metrics.ts';
import { trustedProxyMatcher } from './trusted-proxies.ts';
import { addErrorCodes, ErrorBody } from './schemas.ts';

export type App = FastifyInstance<RawServerDefault, any, any, FastifyBaseLogger, TypeBoxTypeProvider>;

export interface HttpOptions {
  logger: Logger;
  bodyLimitBytes: number;
  trustedProxies: string[];
  https?: { key: string; cert: string } | null;
  openapi: { title: string; version: string; description: string; serverUrl?: string };
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
/** Methods whose request body Fastify parses, whether or not the route declares one. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const REQUEST_ID = /^[\w.:-]{1,128}$/;
const MAX_PARAM_LENGTH = 200;

export async function createHttpApp(options: HttpOptions): Promise<{ app: App; metrics: Metrics }> {
  const isTrusted = trustedProxyMatcher(options.trustedProxies);
  const app = Fastify({
    loggerInstance: options.logger,
    ...(options.https ? { https: options.https } : {}),
    bodyLimit: options.bodyLimitBytes,
    trustProxy: (address: string) => isTrusted(address),
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    // Fastify's own answer to a request that arrives during shutdown is {error, message,
    // statusCode}; the first onRequest hook below answers it as {code, message} instead.
    return503OnClosing: false,
    // Errors Fastify raises before routing (a path that is not valid percent-encoding) skip the
    // error handler; without this they would answer Fastify's own body, not {code, message}.
    frameworkErrors: (error, _request, reply) => {
      const { status, body } = toErrorResponse(error);
      void (reply as FastifyReply).code(status).send(body);
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    clientErrorHandler: answerClientError,
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as App;

  // JSON is the API's only body type (multipart routes register their own parser). Fastify's
  // built-in text/plain parser would hand a string to the body schema, a misleading 422.
  app.removeContentTypeParser('text/plain');
  // JSON is UTF-8 (RFC 8259). Fastify decodes any bytes as UTF-8, so a body sent in Latin-1
  // ("M\xfcller") was stored as "M\ufffdller" without a word; it is refused instead. Parsing itself
  // stays Fastify's (prototype-poisoning guard).
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer;
    // Many HTTP clients label every POST as JSON, even one with nothing to send (cancel, a
    // funding session): an empty body is no body, not malformed JSON. A route that needs fields
    // then names each missing one (422), as it does for a POST sent without any body.
    if (bytes.length === 0) {
      done(null, undefined);
      return;
    }
    if (!isUtf8(bytes)) {
      done(new ApiError(400, 'invalid_json', 'The body is not valid UTF-8: send JSON encoded as UTF-8'), undefined);
      return;
    }
    void parseJson(request, bytes.toString('utf8'), done);
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSchemaErrorFormatter((errors, dataVar) => schemaValidationError(errors as never, dataVar));

  const metrics = createMetrics();

  // A second router that only records which paths exist, so an unknown method on a known path
  // can answer 405 with Allow instead of a misleading 404.
  const known = FindMyWay({ ignoreTrailingSlash: true });
  app.addHook('onRoute', (route) => {
    documentRequestErrors(route.schema as Record<string, unknown> | undefined, [route.method].flat());
    // A POST sent without any body is read as an empty object: routes whose fields are all optional
    // (sandbox fund, ops approve) then work as documented, and a route with required fields names
    // each missing one instead of answering "body: must be object". Only routes with a body get
    // the hook, so reads pay nothing for it.
    if (route.schema?.body) {
      const existing = route.preValidation ? [route.preValidation].flat() : [];
      route.preValidation = [emptyBodyAsObject, ...existing];
    }
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const m of methods) {
      if (m === 'HEAD' || m === 'OPTIONS') continue;
      try {
        known.on(m as 'GET', route.url, () => {});
      } catch {
        // the same path registered twice (e.g. with and without a trailing slash) is fine
      }
    }
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: options.openapi.title, version: options.openapi.version, description: options.openapi.description },
      ...(options.openapi.serverUrl ? { servers: [{ url: options.openapi.serverUrl }] } : {}),
      components: {
        securitySchemes: {
          ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'An organization API key (sk_sandbox_… or sk_live_…).' },
          Bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A user access token from POST /v1/auth/token.' },
        },
      },
    },
    hideUntagged: false,
    // Shared schemas keep their $id as their component name ("Error"), not "def-0".
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  });

  // A shutdown closes idle connections at once, but a request can still arrive on a connection
  // that was busy: it is turned away (the client retries elsewhere or later) rather than started.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
    if (closing) {
      reply.header('Connection', 'close');
      return reply.code(503).send({ code: 'service_unavailable', message: 'The server is shutting down; retry the request' });
    }
  });

  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.httpRequests.inc({ method: request.method, route, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
  });

  app.setNotFoundHandler(async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = METHODS.filter((m) => m !== request.method && known.find(m, path));
    if (allowed.length && !known.find(request.method as 'GET', path)) {
      reply.header('Allow', allowed.join(', '));
      return reply.code(405).send({ code: 'method_not_allowed', message: `${request.method} is not allowed on ${path}; use ${allowed.join(', ')}` });
    }
    return reply.code(404).send({ code: 'not_found', message: `No route ${request.method} ${path}` });
  });

  app.setErrorHandler(async (error: FastifyError | ApiError, request, reply) => {
    const { status, body, headers } = toErrorResponse(error, mediaTypesOf(request));
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    if (headers) reply.headers(headers);
    return reply.code(status).send(body);
  });

  return { app, metrics };
}

/**
 * What Node's HTTP parser refuses before Fastify sees a request (a header section over the limit,
 * a malformed header or request line, an unknown method, a bad Content-Length): the same
 * {code, message} as every other answer, not Fastify's default {error, message, statusCode}.
 */
function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, message] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'request_timeout', 'The request was not received in time']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'headers_too_large', 'The request headers are larger than this server accepts']
        : [400, 'bad_request', 'The request is not valid HTTP/1.1 (request line, header or Content-Length)'];
  const body = JSON.stringify({ code, message });
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(error);
}

function emptyBodyAsObject(request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  if (request.body === undefined) request.body = {};
  done();
}

/**
 * Adds the errors the shell itself produces to a route's documented responses, so every route's
 * OpenAPI entry lists them without each domain repeating it: bad JSON, oversize and wrong media
 * type wherever a body is parsed (on every POST, PUT, PATCH and DELETE, even one that takes no
 * fields: a body sent to it is still parsed), validation wherever there is a schema to fail, and
 * the unexpected.
 */
function documentRequestErrors(schema: Record<string, unknown> | undefined, methods: string[]): void {
  if (!schema || schema.hide) return;
  if (schema.body || methods.some((m) => BODY_METHODS.has(m))) {
    addErrorCodes(schema, 400, ['invalid_json', 'invalid_content_length']);
    addErrorCodes(schema, 413, ['payload_too_large']);
    addErrorCodes(schema, 415, ['unsupported_media_type']);
  }
  if (schema.body || schema.querystring || schema.params || schema.headers) addErrorCodes(schema, 422, ['validation_error']);
  addErrorCodes(schema, 500, ['internal_error']);
}

/** The body types a route takes: its schema's `consumes` (the proof upload's multipart), else JSON. */
function mediaTypesOf(request: FastifyRequest): string[] {
  const consumes = (request.routeOptions.schema as { consumes?: unknown } | undefined)?.consumes;
  return Array.isArray(consumes) && consumes.length ? consumes.map(String) : ['application/json'];
}

function toErrorResponse(error: FastifyError | ApiError | Error, mediaTypes: string[] = ['application/json']): { status: number; body: { code: string; message: string; details?: unknown }; headers?: Record<string, string> } {
  if (error instanceof ApiError) return { status: error.statusCode, body: error.toBody(), ...(error.headers ? { headers: error.headers } : {}) };
  const e = error as FastifyError;
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, body: { code: 'invalid_json', message: e.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ? 'The body is empty but Content-Type is application/json' : 'The body is not valid JSON' } };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, body: { code: 'payload_too_large', message: 'The request body is larger than this endpoint accepts' } };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, body: { code: 'unsupported_media_type', message: `Send the body as ${mediaTypes.join(' or ')}` } };
    case 'FST_ERR_BAD_URL':
      return { status: 400, body: { code: 'invalid_url', message: 'The request path is not valid percent-encoded UTF-8' } };
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return { status: 414, body: { code: 'uri_too_long', message: `A path parameter is longer than ${MAX_PARAM_LENGTH} characters` } };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { status: 400, body: { code: 'invalid_content_length', message: 'Content-Length does not match the body' } };
    default:
      break;
  }
  if (e.name === 'SyntaxError' && e.statusCode === 400) return { status: 400, body: { code: 'invalid_json', message: 'The body is not valid JSON' } };
  if (e.validation) return { status: 422, body: { code: 'validation_error', message: e.message } };
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return { status: e.statusCode, body: { code: 'bad_request', message: e.message } };
  }
  return { status: 500, body: { code: 'internal_error', message: 'An unexpected error occurred; it has been logged with the request id' } };
}

export { ErrorBody };
