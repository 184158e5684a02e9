// Schemas shared by every domain: the error body, list envelopes and pagination parameters.
import { Type } from 'typebox';
import type { TSchema } from 'typebox';

export const Uuid = Type.String({ format: 'uuid' });
export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC timestamp with milliseconds' });

export const ErrorBody = Type.Object(
  {
    code: Type.String({ description: 'Stable machine-readable error code' }),
    message: Type.String({ description: 'Human-readable explanation' }),
    details: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }), { description: 'Field problems (validation errors only)' })),
  },
  { $id: 'Error', title: 'Error', description: 'Every failure: {code, message}, with details for validation errors. Never wrapped.' },
);

export const PageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25, description: 'Page size, 1 to 100' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Opaque cursor from meta.nextCursor of the previous page' })),
};

export const ListMeta = Type.Object({
  total: Type.Integer({ description: 'Number of items matching the query across all pages' }),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as ?cursor= for the next page; null on the last page' }),
});

export function ListOf<T extends TSchema>(item: T, title: string) {
  return Type.Object({ data: Type.Array(item), meta: ListMeta }, { title });
}

/** Standard error responses a route can produce, for the OpenAPI document. */
export function errorResponses(...statuses: number[]): Record<number, typeof ErrorBody> {
  return Object.fromEntries(statuses.map((s) => [s, ErrorBody]));
}

/** A string restricted to a fixed list, typed as the union of its values. */
export function StringEnum<const T extends readonly string[]>(values: T, options: { description?: string; title?: string } = {}) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}
