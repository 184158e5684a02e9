import type { App } from '../platform/http/app.ts';
import { errorResponses } from '../platform/http/schemas.ts';
import { principalOf } from '../auth/guard.ts';
import { CreateEntityBody, Entity, EntityIdParams, EntityList, EntityListQuery, OpsEntity, OpsEntityList, OpsEntityListQuery, RejectEntityBody } from './schemas.ts';
import type { EntityService } from './service.ts';

export async function entityRoutes(app: App, deps: { entities: EntityService }) {
  app.post('/v1/entities', {
    config: { auth: 'any', scope: 'entities:write' },
    schema: {
      operationId: 'createEntity',
      tags: ['Entities'],
      summary: 'Create an entity (a person or business to onboard)',
      body: CreateEntityBody,
      response: { 201: Entity },
    },
    handler: async (request, reply) => reply.code(201).send(await deps.entities.create(principalOf(request).organizationId, request.body)),
  });

  app.get('/v1/entities', {
    config: { auth: 'any', scope: 'entities:read' },
    schema: { operationId: 'listEntities', tags: ['Entities'], summary: 'List entities', querystring: EntityListQuery, response: { 200: EntityList, ...errorResponses({ 400: ['invalid_cursor'] }) } },
    handler: async (request) => {
      const { limit = 25, ...rest } = request.query;
      return deps.entities.list(principalOf(request).organizationId, { limit, ...rest });
    },
  });

  app.get('/v1/entities/:id', {
    config: { auth: 'any', scope: 'entities:read' },
    schema: { operationId: 'getEntity', tags: ['Entities'], summary: 'Get an entity and its onboarding status', params: EntityIdParams, response: { 200: Entity, ...errorResponses({ 404: ['not_found'] }) } },
    handler: async (request) => deps.entities.get(principalOf(request).organizationId, request.params.id),
  });

  app.get('/v1/ops/entities', {
    config: { auth: 'any', ops: true },
    schema: {
      operationId: 'opsListEntities',
      tags: ['Operations'],
      summary: 'Entities awaiting review, across organizations',
      querystring: OpsEntityListQuery,
      response: { 200: OpsEntityList, ...errorResponses({ 400: ['invalid_cursor'] }) },
    },
    handler: async (request) => {
      const { limit = 25, ...rest } = request.query;
      return deps.entities.listForReview({ limit, ...rest });
    },
  });

  app.post('/v1/ops/entities/:id/approve', {
    config: { auth: 'any', ops: true },
    schema: {
      operationId: 'opsApproveEntity',
      tags: ['Operations'],
      summary: 'Approve a PENDING entity (it becomes ACTIVE)',
      params: EntityIdParams,
      response: { 200: OpsEntity, ...errorResponses({ 404: ['not_found'], 409: ['invalid_status_transition'] }) },
    },
    handler: async (request) => deps.entities.approve(request.params.id, principalOf(request).userId),
  });

  app.post('/v1/ops/entities/:id/reject', {
    config: { auth: 'any', ops: true },
    schema: {
      operationId: 'opsRejectEntity',
      tags: ['Operations'],
      summary: 'Reject a PENDING entity (it becomes REJECTED)',
      params: EntityIdParams,
      body: RejectEntityBody,
      response: { 200: OpsEntity, ...errorResponses({ 404: ['not_found'], 409: ['invalid_status_transition'] }) },
    },
    handler: async (request) => deps.entities.reject(request.params.id, principalOf(request).userId, request.body?.reason ?? null),
  });
}
