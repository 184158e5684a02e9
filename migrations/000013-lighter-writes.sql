-- What every creation writes, made lighter: a quote + transfer creation and its setup insert
-- three events, three timeline items, five quote options and an idempotency record, and each
-- index and each jsonb document among them is work on every one of those rows.

-- Indexes no query reads. Events are read in commit order by (organization_id, transaction_id,
-- sequence) and found by id; timeline items by (transfer_id, sequence) and by the status window.
-- A bigserial is unique by construction, so its UNIQUE index only cost a write per row.
DROP INDEX events_by_organization;
ALTER TABLE events DROP CONSTRAINT events_sequence_key;
ALTER TABLE transfer_events DROP CONSTRAINT transfer_events_sequence_key;

-- Documents written once and only ever read back whole are kept as json (their text, checked
-- once) rather than jsonb (parsed into a binary form on every write): a stored response is
-- replayed as it was sent, and an option's legs and fees are read only by the transfer that
-- takes it and by GET /v1/quotes/{id}. No query looks inside them.
ALTER TABLE idempotency_records ALTER COLUMN response_body TYPE json USING response_body::json;
ALTER TABLE quote_options ALTER COLUMN legs TYPE json USING legs::json;
ALTER TABLE quote_options ALTER COLUMN fees TYPE json USING fees::json;
