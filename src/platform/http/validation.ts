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
  return ajv.compile(schema as object);
};

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
