// Request validation. Bodies are validated strictly (a string is not silently turned into a
// number); query strings and path params arrive as text, so they are coerced to their types.
import { Ajv } from 'ajv';
import type { ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { validationError } from './errors.ts';
import type { FieldProblem } from './errors.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
  });
  addFormats(ajv);
  return ajv;
}

const strictAjv = makeAjv(false);
const coercingAjv = makeAjv(true);

export const validatorCompiler: FastifySchemaCompiler<any> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? strictAjv : coercingAjv;
  const validate = ajv.compile(schema as object);
  // PostgreSQL cannot store U+0000 in text or jsonb, so a value holding it would fail at the
  // database as a 500 (and the failed statement's parameters would reach the error). Every
  // request part with a schema refuses it here, as a precise 422, before anything runs.
  const check = (data: unknown) => {
    if (!validate(data)) {
      check.errors = validate.errors;
      return false;
    }
    const at = nulCharacterAt(data, '');
    check.errors = at === null ? null : [{ instancePath: at, schemaPath: '#', keyword: 'pattern', params: {}, message: 'must not contain the NUL character (U+0000)' } as ErrorObject];
    return at === null;
  };
  check.errors = null as ErrorObject[] | null | undefined;
  return check;
};

/** The JSON-pointer path of the first string or key holding U+0000, or null when there is none. */
function nulCharacterAt(value: unknown, path: string): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path : null;
  if (value === null || typeof value !== 'object') return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nulCharacterAt(value[i], `${path}/${i}`);
      if (found !== null) return found;
    }
    return null;
  }
  for (const [key, item] of Object.entries(value)) {
    if (key.includes('\u0000')) return `${path}/${key.replace(/\u0000/g, '')}`;
    const found = nulCharacterAt(item, `${path}/${key}`);
    if (found !== null) return found;
  }
  return null;
}

const PART_PREFIX: Record<string, string> = { body: '', querystring: 'query.', params: 'path.', headers: 'headers.' };

export function describeAjvErrors(errors: ErrorObject[], part: string): FieldProblem[] {
  const prefix = PART_PREFIX[part] ?? '';
  const problems: FieldProblem[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    // anyOf/oneOf produce a summary error plus one per branch; the branch errors say more.
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf' || e.keyword === 'if') continue;
    let field = e.instancePath.replace(/^\//, '').split('/').filter(Boolean).join('.');
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'required') {
      field = [field, (e.params as { missingProperty: string }).missingProperty].filter(Boolean).join('.');
      message = 'is required';
    } else if (e.keyword === 'additionalProperties') {
      field = [field, (e.params as { additionalProperty: string }).additionalProperty].filter(Boolean).join('.');
      message = 'is not a recognised field';
    } else if (e.keyword === 'enum') {
      message = `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
    } else if (e.keyword === 'const') {
      message = `must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}`;
    }
    const path = `${prefix}${field}`.replace(/\.$/, '');
    const key = `${path}|${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    problems.push({ path, message });
  }
  return problems;
}

export function schemaValidationError(errors: ErrorObject[], part: string) {
  return validationError(describeAjvErrors(errors, part));
}
