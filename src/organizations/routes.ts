import type { App } from '../platform/http/app.ts';
import { errorResponses } from '../platform/http/schemas.ts';
import { principalOf } from '../auth/guard.ts';
import { OpsOrganization, OrganizationIdParams, PatchOrganizationBody } from './schemas.ts';
import type { OrganizationService } from './service.ts';

export async function organizationRoutes(app: App, deps: { organizations: OrganizationService }) {
  app.get('/v1/ops/organizations/:id', {
    config: { auth: 'any', ops: true },
    schema: {
      operationId: 'opsGetOrganization',
      tags: ['Operations'],
      summary: 'Get an organization with its features',
      params: OrganizationIdParams,
      response: { 200: OpsOrganization, ...errorResponses({ 404: ['not_found'] }) },
    },
    handler: async (request) => deps.organizations.view(request.params.id),
  });

  app.patch('/v1/ops/organizations/:id', {
    config: { auth: 'any', ops: true },
    schema: {
      tags: ['Operations'],
      operationId: 'opsReplaceOrganizationFeatures',
      summary: "Replace an organization's features",
      description:
        'The only way to turn a feature on in production, where organizations start with none. ' +
        "Applies from the organization's next request, for its API keys and bearer tokens alike. An unknown feature is 422 validation_error.",
      params: OrganizationIdParams,
      body: PatchOrganizationBody,
      response: { 200: OpsOrganization, ...errorResponses({ 404: ['not_found'] }) },
    },
    handler: async (request) => {
      const view = await deps.organizations.setFeatures(request.params.id, request.body.features);
      request.log.info({ organizationId: view.id, features: view.features, operatorId: principalOf(request).userId }, 'organization features replaced');
      return view;
    },
  });
}
