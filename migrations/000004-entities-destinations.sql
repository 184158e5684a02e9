-- Entities (the people and businesses a customer moves money for) and their saved destinations:
-- fiat accounts and crypto wallets. A destination's instructions live in immutable versions, so a
-- transfer can keep the exact instructions it was confirmed against while the customer edits.

CREATE TABLE entities (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id),
  type text NOT NULL CHECK (type IN ('INDIVIDUAL', 'BUSINESS')),
  status text NOT NULL CHECK (status IN ('PENDING', 'ACTIVE', 'REJECTED')),
  status_reason text,
  country text NOT NULL,
  -- The identity fields as the customer sent them (names, email, date of birth, address,
  -- registration number); their shape depends on type and is validated by the API schema.
  profile jsonb NOT NULL,
  -- The SERVICE_OPS user who approved or rejected the entity, when a person did.
  reviewed_by_user_id uuid REFERENCES users (id),
  reviewed_at timestamptz(3),
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now()
);

CREATE INDEX entities_by_organization ON entities (organization_id, created_at, id);
-- The operator's review queue spans organizations.
CREATE INDEX entities_awaiting_review ON entities (created_at, id) WHERE status = 'PENDING';

CREATE TABLE destinations (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id),
  entity_id uuid NOT NULL REFERENCES entities (id),
  kind text NOT NULL CHECK (kind IN ('FIAT_ACCOUNT', 'CRYPTO_WALLET')),
  -- The current version; rises by one with every change of instructions.
  version integer NOT NULL CHECK (version >= 1),
  -- A customer label; not part of the instructions, so changing it makes no new version.
  nickname text,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now()
);

CREATE INDEX destinations_by_organization ON destinations (organization_id, kind, created_at, id);
CREATE INDEX destinations_by_entity ON destinations (organization_id, entity_id, kind, created_at, id);

CREATE TABLE destination_versions (
  destination_id uuid NOT NULL REFERENCES destinations (id),
  version integer NOT NULL CHECK (version >= 1),
  organization_id uuid NOT NULL REFERENCES organizations (id),
  relationship text NOT NULL CHECK (relationship IN ('SELF', 'THIRD_PARTY')),
  -- {country, currency, method} for a fiat account, {blockchain, asset} for a crypto wallet.
  rail jsonb NOT NULL,
  -- {details, beneficiary} for a fiat account, {address, memo, tag} for a crypto wallet.
  instructions jsonb NOT NULL,
  created_by_type text NOT NULL CHECK (created_by_type IN ('USER', 'API_KEY')),
  created_by_id uuid NOT NULL,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (destination_id, version)
);
