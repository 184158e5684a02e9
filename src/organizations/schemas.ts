import { Type } from 'typebox';
import { StringEnum, Timestamp, Uuid } from '../platform/http/schemas.ts';
import { FEATURES } from './service.ts';

const FeatureName = StringEnum(FEATURES, {
  description: 'reports: the /v1/reports endpoints (without it they answer 403 feature_not_enabled). On by default for organizations created in sandbox; off in production until an operator turns it on.',
});

export const OpsOrganization = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    kind: StringEnum(['CUSTOMER', 'OPERATOR'] as const, { description: "CUSTOMER: a tenant. OPERATOR: the service operator's own organization." }),
    features: Type.Array(FeatureName, { description: 'Features enabled for the organization' }),
    createdAt: Timestamp,
  },
  { title: 'OpsOrganization', additionalProperties: false },
);

export const OrganizationIdParams = Type.Object({ id: Uuid });

export const PatchOrganizationBody = Type.Object(
  {
    features: Type.Array(FeatureName, {
      maxItems: 20,
      description: 'The complete feature list: it replaces the current one, so [] turns every feature off. A name given twice counts once.',
    }),
  },
  { additionalProperties: false },
);
