import { Type } from 'typebox';
import { ListOf, PageQuery, StringEnum, Timestamp, Uuid } from '../platform/http/schemas.ts';
import { User } from '../users/schemas.ts';
import { SCOPES } from './permissions.ts';

export const Scope = StringEnum(SCOPES, { description: 'A permission an API key carries or a role grants' });

export const SignUpBody = Type.Object(
  {
    organizationName: Type.String({ minLength: 1, maxLength: 200 }),
    email: Type.String({ format: 'email', maxLength: 254 }),
    password: Type.String({ minLength: 10, maxLength: 200, description: 'At least 10 characters' }),
    fullName: Type.String({ minLength: 1, maxLength: 200 }),
  },
  { additionalProperties: false },
);

export const SignUpResponse = Type.Object({ organizationId: Uuid, user: User, accessToken: Type.String() });

export const TokenBody = Type.Object(
  { email: Type.String({ minLength: 3, maxLength: 254 }), password: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);

export const TokenResponse = Type.Object({
  accessToken: Type.String({ description: 'EdDSA-signed JWT; verify with /.well-known/jwks.json' }),
  tokenType: Type.Literal('Bearer'),
  expiresIn: Type.Integer({ description: 'Seconds until the token expires (900)' }),
});

export const Jwks = Type.Object({ keys: Type.Array(Type.Object({ kty: Type.String(), crv: Type.Optional(Type.String()), x: Type.Optional(Type.String()), kid: Type.Optional(Type.String()), alg: Type.Optional(Type.String()), use: Type.Optional(Type.String()) })) });

export const ApiKey = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    scopes: Type.Array(Scope),
    prefix: Type.String({ description: 'The first characters of the key, to recognise it' }),
    lastFour: Type.String({ description: 'The last four characters of the key' }),
    createdAt: Timestamp,
    lastUsedAt: Type.Union([Timestamp, Type.Null()]),
    revokedAt: Type.Union([Timestamp, Type.Null()]),
  },
  { title: 'ApiKey' },
);

export const ApiKeyList = ListOf(ApiKey, 'ApiKeyList');
export const ApiKeyListQuery = Type.Object(PageQuery, { additionalProperties: false });

export const CreatedApiKey = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    scopes: Type.Array(Scope),
    secret: Type.String({ description: 'The key itself. Shown only in this response; store it now.' }),
    prefix: Type.String(),
    lastFour: Type.String(),
    createdAt: Timestamp,
  },
  { title: 'CreatedApiKey' },
);

export const CreateApiKeyBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 100 }), scopes: Type.Array(Scope, { minItems: 1, uniqueItems: true }) },
  { additionalProperties: false },
);

export const IdParams = Type.Object({ id: Uuid });
