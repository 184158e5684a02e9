-- Webhook endpoints, one delivery per (endpoint, event), and every attempt of every delivery.
-- Plus the column that lets GET /v1/events?after= and catch-up readers never skip an event.

-- A bigserial is handed out at insert time, not at commit, so under concurrent writers an event
-- with a lower sequence can become visible after one with a higher sequence: a reader that
-- remembered "after sequence 42" would miss it for ever. Readers therefore order by the writing
-- transaction first and only see events whose transaction is older than every transaction still
-- running (pg_snapshot_xmin); anything that becomes visible later sorts after what they saw.
ALTER TABLE events ADD COLUMN transaction_id xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX events_by_organization_in_commit_order ON events (organization_id, transaction_id, sequence);

CREATE TABLE webhook_endpoints (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id),
  url text NOT NULL,
  description text,
  event_types text[] NOT NULL,
  status text NOT NULL DEFAULT 'ENABLED' CHECK (status IN ('ENABLED', 'DISABLED')),
  disabled_reason text,
  disabled_at timestamptz(3),
  -- The signing secret must be readable to sign (HMAC), so it is stored as issued.
  secret text NOT NULL,
  -- After a rotation the replaced secret keeps signing until previous_secret_expires_at.
  previous_secret text,
  previous_secret_expires_at timestamptz(3),
  consecutive_failures integer NOT NULL DEFAULT 0,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now()
);

CREATE INDEX webhook_endpoints_by_organization ON webhook_endpoints (organization_id, created_at, id);

-- Why an endpoint was enabled or disabled, and when: the record kept when the service disables
-- an endpoint on its own (410, too many consecutive failures).
CREATE TABLE webhook_endpoint_status_changes (
  id uuid PRIMARY KEY,
  endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  organization_id uuid NOT NULL REFERENCES organizations (id),
  status text NOT NULL CHECK (status IN ('ENABLED', 'DISABLED')),
  reason text NOT NULL,
  detail text,
  created_at timestamptz(3) NOT NULL DEFAULT now()
);

CREATE INDEX webhook_endpoint_status_changes_by_endpoint ON webhook_endpoint_status_changes (endpoint_id, created_at);

CREATE TABLE webhook_deliveries (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id),
  endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id uuid NOT NULL REFERENCES events (id),
  event_type text NOT NULL,
  status text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'SUCCEEDED', 'FAILED')),
  -- Automatic attempts made so far; a delivery job for step n only runs when this is n - 1, so a
  -- job that pg-boss runs twice (after a crash) cannot start a second retry chain.
  retry_step integer NOT NULL DEFAULT 0,
  attempt_count integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz(3),
  last_attempt_at timestamptz(3),
  failure_reason text,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now(),
  UNIQUE (endpoint_id, event_id)
);

CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, created_at, id);

CREATE TABLE webhook_delivery_attempts (
  id uuid PRIMARY KEY,
  delivery_id uuid NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempt_number integer NOT NULL,
  trigger text NOT NULL CHECK (trigger IN ('AUTOMATIC', 'MANUAL')),
  status_code integer,
  latency_ms integer NOT NULL,
  -- At most 1 KB of what the receiver answered.
  response_body text,
  error text,
  succeeded boolean NOT NULL,
  started_at timestamptz(3) NOT NULL,
  finished_at timestamptz(3) NOT NULL,
  UNIQUE (delivery_id, attempt_number)
);
