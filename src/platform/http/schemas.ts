// Schemas shared by every domain: the error body, list envelopes and pagination parameters.
import { Type } from 'typebox';
import type { Static, TSchema, TSchemaOptions } from 'typebox';

export const Uuid = Type.String({ format: 'uuid' });
export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC timestamp with milliseconds' });

/**
 * One of several object shapes told apart by one property (`type: FIAT | CRYPTO`). Validation
 * reads that property first and reports only the problems of the shape it names, so a crypto
 * route missing its blockchain says `to.blockchain: is required`, not also what a fiat route
 * would need; the OpenAPI document carries the discriminator for generated clients.
 */
export function TaggedUnion<T extends TSchema[]>(propertyName: string, branches: [...T], options: TSchemaOptions = {}) {
  // `type: object` here: the discriminator keyword passes over anything that is not an object.
  return Type.Unsafe<Static<T[number]>>({ ...options, type: 'object', oneOf: branches, discriminator: { propertyName } });
}

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

/**
 * The error body of one status of one route: ErrorBody whose `code` is one of `codes`, listed in
 * the OpenAPI document so clients can switch on them. Serialization is unchanged (an enum does
 * not filter), so the list documents, it never rewrites an answer.
 */
export function errorBody(codes: readonly string[]) {
  const list = [...new Set(codes)];
  return Type.Object(
    {
      code: Type.Unsafe<string>({ type: 'string', enum: list, description: 'Stable machine-readable error code' }),
      message: ErrorBody.properties.message,
      details: ErrorBody.properties.details,
    },
    { title: 'Error', description: `{code, message}; code is one of: ${list.map((c) => `\`${c}\``).join(', ')}` },
  );
}

/**
 * The error answers a route produces itself, each status with its codes:
 * `errorResponses({ 404: ['not_found'], 409: ['quote_option_used'] })`. The HTTP shell and the auth
 * guard add theirs (invalid_json, validation_error, unauthorized, rate_limited, …) to every route.
 */
export function errorResponses(codes: Record<number, readonly string[]>): Record<number, ReturnType<typeof errorBody>> {
  return Object.fromEntries(Object.entries(codes).map(([status, list]) => [status, errorBody(list)]));
}

/** The codes a documented error response lists, or null when the response is not an error body. */
function codesOf(schema: unknown): string[] | null {
  const code = (schema as { properties?: { code?: { enum?: unknown } } } | undefined)?.properties?.code;
  return code && Array.isArray(code.enum) ? (code.enum as string[]) : null;
}

/**
 * Adds codes to the documented answer of a route for one status (from an onRoute hook). A status
 * the route documents with its own non-error schema (the 503 of /health) is left alone.
 */
export function addErrorCodes(schema: Record<string, unknown>, status: number, codes: readonly string[]): void {
  const responses = (schema.response ??= {}) as Record<string, unknown>;
  const existing = responses[status];
  const known = codesOf(existing);
  if (existing !== undefined && !known) return;
  responses[status] = errorBody([...(known ?? []), ...codes]);
}

/** A string restricted to a fixed list, typed as the union of its values. */
export function StringEnum<const T extends readonly string[]>(values: T, options: { description?: string; title?: string } = {}) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}
