-- Tenancy and credentials: organizations, their users, API keys, token signing keys,
-- and idempotency records shared by every endpoint that takes an Idempotency-Key.

CREATE TABLE organizations (
  id uuid PRIMARY KEY,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  -- OPERATOR is the service operator's own organization; its users hold SERVICE_OPS.
  kind text NOT NULL DEFAULT 'CUSTOMER' CHECK (kind IN ('CUSTOMER', 'OPERATOR')),
  features text[] NOT NULL DEFAULT '{}',
  created_at timestamptz(3) NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX organizations_single_operator ON organizations (kind) WHERE kind = 'OPERATOR';

CREATE TABLE users (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id),
  email text NOT NULL,
  full_name text NOT NULL,
  password_hash text NOT NULL,
  roles text[] NOT NULL,
  status text NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'DISABLED')),
  created_at timestamptz(3) NOT NULL DEFAULT now()
);

-- Sign-in is by email alone, so an email belongs to one user across all organizations.
CREATE UNIQUE INDEX users_email_unique ON users (lower(email));
CREATE INDEX users_by_organization ON users (organization_id, created_at, id);

CREATE TABLE api_keys (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id),
  name text NOT NULL,
  scopes text[] NOT NULL,
  -- lookup_id is the public, random part of the key used to find the row; the secret itself
  -- is kept only as a SHA-256 digest and compared in constant time.
  lookup_id text NOT NULL UNIQUE,
  secret_hash bytea NOT NULL,
  prefix text NOT NULL,
  last_four text NOT NULL,
  created_by_user_id uuid REFERENCES users (id),
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  last_used_at timestamptz(3),
  revoked_at timestamptz(3)
);

CREATE INDEX api_keys_by_organization ON api_keys (organization_id, created_at, id);

CREATE TABLE signing_keys (
  kid text PRIMARY KEY,
  algorithm text NOT NULL,
  public_jwk jsonb NOT NULL,
  private_jwk jsonb NOT NULL,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  retired_at timestamptz(3)
);

CREATE TABLE idempotency_records (
  organization_id uuid NOT NULL REFERENCES organizations (id),
  -- The operation the key was used for, e.g. 'POST /v1/transfers': keys are per operation.
  operation text NOT NULL,
  idempotency_key text NOT NULL,
  request_hash text NOT NULL,
  state text NOT NULL CHECK (state IN ('IN_PROGRESS', 'COMPLETED')),
  response_status integer,
  response_body jsonb,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  locked_until timestamptz(3) NOT NULL,
  expires_at timestamptz(3) NOT NULL,
  PRIMARY KEY (organization_id, operation, idempotency_key)
);

CREATE INDEX idempotency_records_expiry ON idempotency_records (expires_at);
