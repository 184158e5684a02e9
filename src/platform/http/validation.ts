// Request validation. Bodies are validated strictly (a string is not silently turned into a
// number); query strings and path params arrive as text, so they are coerced to their types.
import { Ajv } from 'ajv';
import type { ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { validationError } from './errors.ts';
import type { FieldProblem } from './errors.ts';
import { UUID_PATTERN } from '../ids.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
    // Tagged unions (TaggedUnion): the tag picks the one shape whose problems are reported.
    discriminator: true,
    // Errors carry their schema, so a tag outside the union can be answered with the tags it takes.
    verbose: true,
  });
  addFormats(ajv);
  // ajv-formats' uuid also takes a "urn:uuid:" prefix, which PostgreSQL's uuid type refuses.
  ajv.addFormat('uuid', UUID_PATTERN);
  // RFC 3339 lets through instants the database cannot store or JavaScript cannot read: year 0000,
  // years past 9999 once the offset is applied, and leap seconds (23:59:60).
  const rfc3339 = ajv.formats['date-time'] as { validate: (text: string) => boolean; compare?: (a: string, b: string) => number | undefined };
  ajv.addFormat('date-time', { type: 'string', validate: (text: string) => rfc3339.validate(text) && storableInstant(text), ...(rfc3339.compare ? { compare: rfc3339.compare } : {}) });
  return ajv;
}

const FIRST_STORABLE = Date.parse('0001-01-01T00:00:00.000Z');
const LAST_STORABLE = Date.parse('9999-12-31T23:59:59.999Z');

/** Whether an RFC 3339 date-time is an instant from 0001-01-01 to 9999-12-31 (UTC). */
function storableInstant(text: string): boolean {
  const t = Date.parse(text);
  return Number.isFinite(t) && t >= FIRST_STORABLE && t <= LAST_STORABLE;
}

const strictAjv = makeAjv(false);
const coercingAjv = makeAjv(true);

export const validatorCompiler: FastifySchemaCompiler<any> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? strictAjv : coercingAjv;
  const validate = ajv.compile(schema as object);
  // PostgreSQL cannot store U+0000 in text or jsonb, and refuses an unpaired UTF-16 surrogate
  // (JSON "\ud800") in jsonb, so a value holding either would fail at the database as a 500 (and
  // the failed statement's parameters would reach the error); in a text column the surrogate would
  // silently become U+FFFD instead. Every request part with a schema refuses both here, as a
  // precise 422, before anything runs.
  const check = (data: unknown) => {
    if (!validate(data)) {
      check.errors = validate.errors;
      return false;
    }
    const found = unstorableTextAt(data, '');
    check.errors = found === null ? null : [{ instancePath: found.path, schemaPath: '#', keyword: 'pattern', params: {}, message: found.message } as ErrorObject];
    return found === null;
  };
  check.errors = null as ErrorObject[] | null | undefined;
  return check;
};

const NUL = 'must not contain the NUL character (U+0000)';
const LONE_SURROGATE = 'must not contain an unpaired UTF-16 surrogate (U+D800 to U+DFFF): send well-formed Unicode';

/** What the database cannot store in a string, or null when it can. */
function unstorableText(text: string): string | null {
  if (text.includes('\u0000')) return NUL;
  return text.isWellFormed() ? null : LONE_SURROGATE;
}

/** The JSON-pointer path of the first string or key the database cannot store, and why; null when there is none. */
function unstorableTextAt(value: unknown, path: string): { path: string; message: string } | null {
  if (typeof value === 'string') {
    const message = unstorableText(value);
    return message === null ? null : { path, message };
  }
  if (value === null || typeof value !== 'object') return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = unstorableTextAt(value[i], `${path}/${i}`);
      if (found !== null) return found;
    }
    return null;
  }
  for (const [key, item] of Object.entries(value)) {
    const keyProblem = unstorableText(key);
    if (keyProblem !== null) return { path: `${path}/${key.replace(/\u0000/g, '').toWellFormed()}`, message: keyProblem };
    const found = unstorableTextAt(item, `${path}/${key}`);
    if (found !== null) return found;
  }
  return null;
}

const FORMAT_MESSAGES: Record<string, string> = {
  'date-time': 'must be an RFC 3339 date-time with a time zone, from year 0001 to 9999 (e.g. 2026-01-31T09:30:00Z)',
  uuid: 'must be a UUID (8-4-4-4-12 hexadecimal digits)',
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
    } else if (e.keyword === 'format') {
      message = FORMAT_MESSAGES[(e.params as { format: string }).format] ?? message;
    } else if (e.keyword === 'discriminator') {
      const { tag, tagValue } = e.params as { tag: string; tagValue: unknown };
      field = [field, tag].filter(Boolean).join('.');
      const tags = tagsOf(e.parentSchema, tag);
      message = tagValue === undefined ? 'is required' : `must be one of ${tags.join(', ')}`;
    }
    const path = `${prefix}${field}`.replace(/\.$/, '');
    const key = `${path}|${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    problems.push({ path, message });
  }
  return problems;
}

/** The values a tagged union's tag takes, in the order of its shapes. */
function tagsOf(union: unknown, tag: string): string[] {
  const shapes = (union as { oneOf?: Array<{ properties?: Record<string, { const?: string; enum?: string[] }> }> } | undefined)?.oneOf ?? [];
  return shapes.flatMap((shape) => {
    const property = shape.properties?.[tag];
    return property?.const !== undefined ? [property.const] : (property?.enum ?? []);
  });
}

export function schemaValidationError(errors: ErrorObject[], part: string) {
  return validationError(describeAjvErrors(errors, part));
}
