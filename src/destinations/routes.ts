import type { FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import type { App } from '../platform/http/app.ts';
import { errorResponses } from '../platform/http/schemas.ts';
import { principalOf } from '../auth/guard.ts';
import {
  CreateCryptoWalletBody,
  CreateFiatAccountBody,
  CryptoWallet,
  CryptoWalletList,
  CryptoWalletSchemas,
  CryptoWalletVersion,
  CryptoWalletVersionList,
  DestinationIdParams,
  DestinationListQuery,
  FiatAccount,
  FiatAccountList,
  FiatAccountVersion,
  FiatAccountVersionList,
  FiatRailSchemaResponse,
  FiatSchemaQuery,
  UpdateCryptoWalletBody,
  UpdateFiatAccountBody,
  VersionListQuery,
  VersionParams,
} from './schemas.ts';
import type { Actor, DestinationService } from './service.ts';

/** The acting organization and the credential recorded as the creator of new versions. */
function actorOf(request: FastifyRequest): Actor {
  const p = principalOf(request);
  return { organizationId: p.organizationId, createdBy: p.kind === 'user' ? { type: 'USER', id: p.userId! } : { type: 'API_KEY', id: p.apiKeyId! } };
}

const READ = { auth: 'any', scope: 'destinations:read' } as const;
const WRITE = { auth: 'any', scope: 'destinations:write' } as const;

/** One kind of destination as the HTTP layer sees it: its paths, its schemas and its service calls. */
interface DestinationKindRoutes {
  path: string;
  /** The resource name in operationIds: createFiatAccount, listFiatAccountVersions, … */
  name: string;
  tag: string;
  noun: string;
  schemas: { create: TSchema; update: TSchema; resource: TSchema; list: TSchema; version: TSchema; versionList: TSchema };
  create(actor: Actor, body: never): Promise<unknown>;
  update(actor: Actor, id: string, body: never): Promise<unknown>;
  get(organizationId: string, id: string): Promise<unknown>;
  list(organizationId: string, query: { limit: number; cursor?: string; entityId?: string }): Promise<unknown>;
  listVersions(organizationId: string, id: string, query: { limit: number; cursor?: string }): Promise<unknown>;
  getVersion(organizationId: string, id: string, version: number): Promise<unknown>;
}

// Fiat accounts and crypto wallets share their lifecycle: create, read, list, edit into a new
// version, and read past versions. Only their schemas and service calls differ.
async function kindRoutes(app: App, k: DestinationKindRoutes, editNote: string) {
  const tags = [k.tag];
  const org = (request: FastifyRequest) => principalOf(request).organizationId;
  const page = (query: { limit?: number }) => ({ ...query, limit: query.limit ?? 25 });

  app.post(k.path, {
    config: WRITE,
    schema: {
      operationId: `create${k.name}`,
      tags,
      summary: `Save a ${k.noun}`,
      body: k.schemas.create,
      response: { 201: k.schemas.resource, ...errorResponses({ 404: ['not_found'], 422: ['unsupported_route'] }) },
    },
    handler: async (request, reply) => reply.code(201).send(await k.create(actorOf(request), request.body as never)),
  });

  app.get(k.path, {
    config: READ,
    schema: { operationId: `list${k.name}s`, tags, summary: `List ${k.noun}s`, querystring: DestinationListQuery, response: { 200: k.schemas.list, ...errorResponses({ 400: ['invalid_cursor'], 404: ['not_found'] }) } },
    handler: async (request) => k.list(org(request), page(request.query)),
  });

  app.get(`${k.path}/:id`, {
    config: READ,
    schema: {
      operationId: `get${k.name}`,
      tags,
      summary: `Get a ${k.noun} (current version)`,
      params: DestinationIdParams,
      response: { 200: k.schemas.resource, ...errorResponses({ 404: ['not_found'] }) },
    },
    handler: async (request) => k.get(org(request), request.params.id),
  });

  app.patch(`${k.path}/:id`, {
    config: WRITE,
    schema: {
      operationId: `update${k.name}`,
      tags,
      summary: `Edit a ${k.noun} (${editNote})`,
      params: DestinationIdParams,
      body: k.schemas.update,
      response: { 200: k.schemas.resource, ...errorResponses({ 404: ['not_found'], 409: ['concurrent_update'], 422: ['unsupported_route'] }) },
    },
    handler: async (request) => k.update(actorOf(request), request.params.id, request.body as never),
  });

  app.get(`${k.path}/:id/versions`, {
    config: READ,
    schema: {
      operationId: `list${k.name}Versions`,
      tags,
      summary: `All versions of a ${k.noun}, oldest first`,
      params: DestinationIdParams,
      querystring: VersionListQuery,
      response: { 200: k.schemas.versionList, ...errorResponses({ 400: ['invalid_cursor'], 404: ['not_found'] }) },
    },
    handler: async (request) => k.listVersions(org(request), request.params.id, page(request.query)),
  });

  app.get(`${k.path}/:id/versions/:version`, {
    config: READ,
    schema: {
      operationId: `get${k.name}Version`,
      tags,
      summary: `One version of a ${k.noun}`,
      params: VersionParams,
      response: { 200: k.schemas.version, ...errorResponses({ 404: ['not_found'] }) },
    },
    handler: async (request) => k.getVersion(org(request), request.params.id, request.params.version),
  });
}

export async function destinationRoutes(app: App, deps: { destinations: DestinationService }) {
  const d = deps.destinations;

  // Registered before /:id so the static path wins, and documented first.
  app.get('/v1/fiat-accounts/schemas', {
    config: READ,
    schema: {
      operationId: 'getFiatAccountSchema',
      tags: ['Fiat accounts'],
      summary: 'The destination schema of a fiat rail',
      description: 'JSON Schemas of `details` and `beneficiary` for the rail named by country, currency and method. A rail this environment does not offer answers 422 unsupported_route.',
      querystring: FiatSchemaQuery,
      response: { 200: FiatRailSchemaResponse, ...errorResponses({ 422: ['unsupported_route'] }) },
    },
    handler: async (request) => d.fiatRailSchema(request.query),
  });

  app.get('/v1/crypto-wallets/schemas', {
    config: READ,
    schema: {
      operationId: 'listCryptoWalletSchemas',
      tags: ['Crypto wallets'],
      summary: 'Supported wallet blockchains, their address formats and memo/tag rules',
      response: { 200: CryptoWalletSchemas },
    },
    handler: async () => d.cryptoWalletSchemas(),
  });

  await kindRoutes(
    app,
    {
      path: '/v1/fiat-accounts',
      name: 'FiatAccount',
      tag: 'Fiat accounts',
      noun: 'fiat account',
      schemas: { create: CreateFiatAccountBody, update: UpdateFiatAccountBody, resource: FiatAccount, list: FiatAccountList, version: FiatAccountVersion, versionList: FiatAccountVersionList },
      create: (actor, body) => d.createFiatAccount(actor, body),
      update: (actor, id, body) => d.updateFiatAccount(actor, id, body),
      get: (org, id) => d.getFiatAccount(org, id),
      list: (org, query) => d.listFiatAccounts(org, query),
      listVersions: (org, id, query) => d.listFiatAccountVersions(org, id, query),
      getVersion: (org, id, version) => d.getFiatAccountVersion(org, id, version),
    },
    'a change of instructions makes a new version',
  );

  await kindRoutes(
    app,
    {
      path: '/v1/crypto-wallets',
      name: 'CryptoWallet',
      tag: 'Crypto wallets',
      noun: 'crypto wallet',
      schemas: { create: CreateCryptoWalletBody, update: UpdateCryptoWalletBody, resource: CryptoWallet, list: CryptoWalletList, version: CryptoWalletVersion, versionList: CryptoWalletVersionList },
      create: (actor, body) => d.createCryptoWallet(actor, body),
      update: (actor, id, body) => d.updateCryptoWallet(actor, id, body),
      get: (org, id) => d.getCryptoWallet(org, id),
      list: (org, query) => d.listCryptoWallets(org, query),
      listVersions: (org, id, query) => d.listCryptoWalletVersions(org, id, query),
      getVersion: (org, id, version) => d.getCryptoWalletVersion(org, id, version),
    },
    'a change of address, blockchain, asset, memo, tag or relationship makes a new version',
  );
}
