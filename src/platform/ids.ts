// Ids are UUIDs in the canonical 8-4-4-4-12 form, the only form PostgreSQL's uuid type and every
// route accept. Checking before a lookup turns a malformed id into the caller's 404 (or 422/400)
// instead of a database error.
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (text: string): boolean => UUID_PATTERN.test(text);
