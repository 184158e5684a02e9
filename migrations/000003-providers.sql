-- Providers: runtime availability overrides and the sandbox simulators' leg state.
-- Provider definitions themselves live in the per-environment configuration file; only what
-- changes while the service runs is kept here, so every process sees the same thing.

-- An operator's override of a provider's configured availability (no row: the configured value).
CREATE TABLE provider_status (
  provider_id text PRIMARY KEY,
  status text NOT NULL CHECK (status IN ('ACTIVE', 'DEGRADED', 'DOWN')),
  reason text,
  updated_by_user_id uuid REFERENCES users (id),
  updated_at timestamptz(3) NOT NULL DEFAULT now()
);

-- Legs the simulated providers are carrying. The simulator is a pretend external system, so it
-- keeps its own record, apart from the transfer engine's legs; a restart resumes from here.
CREATE TABLE sandbox_provider_legs (
  provider_reference text PRIMARY KEY,
  provider_id text NOT NULL,
  -- The caller's leg id: executing the same leg twice returns the same reference.
  leg_id text NOT NULL,
  transfer_id text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('COLLECTION', 'CONVERSION', 'PAYOUT')),
  from_asset text NOT NULL,
  to_asset text NOT NULL,
  amount numeric NOT NULL,
  amount_out numeric,
  rate text,
  sandbox_outcome text NOT NULL CHECK (sandbox_outcome IN ('SUCCEED', 'FAIL', 'RETURN')),
  stage_index integer NOT NULL DEFAULT 0,
  progress_stage text NOT NULL,
  status text NOT NULL CHECK (status IN ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED', 'RETURNED', 'CANCELED')),
  reason text,
  -- What the pretend provider last said, in its own words. Never leaves the service.
  raw_payload jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now(),
  UNIQUE (provider_id, leg_id)
);
