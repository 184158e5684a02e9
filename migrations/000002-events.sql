-- The transactional outbox: every customer-visible event is written here in the same
-- transaction as the change it describes. Webhook delivery and GET /v1/events read from it.

CREATE TABLE events (
  id uuid PRIMARY KEY,
  -- Commit-ordered position for GET /v1/events?after= and for the delivery dispatcher.
  sequence bigserial UNIQUE NOT NULL,
  organization_id uuid NOT NULL REFERENCES organizations (id),
  type text NOT NULL,
  data jsonb NOT NULL,
  created_at timestamptz(3) NOT NULL DEFAULT now()
);

CREATE INDEX events_by_organization ON events (organization_id, sequence);
