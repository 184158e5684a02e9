import { Type } from 'typebox';
import { ListOf, PageQuery, StringEnum, Timestamp, Uuid } from '../platform/http/schemas.ts';
import { ROLES } from './service.ts';

/** SPEC.md's User table, field for field. */
export const User = Type.Object(
  {
    id: Uuid,
    email: Type.String({ description: 'Email address of the user' }),
    fullName: Type.String(),
    roles: Type.Array(StringEnum(ROLES)),
    status: Type.Union([Type.Literal('ACTIVE'), Type.Literal('DISABLED')], { description: 'ACTIVE, or DISABLED for a user who can no longer sign in' }),
    createdAt: Timestamp,
  },
  { title: 'User', additionalProperties: false },
);

export const UserList = ListOf(User, 'UserList');
export const UserListQuery = Type.Object(PageQuery, { additionalProperties: false });
