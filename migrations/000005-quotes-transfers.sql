-- Quotes and transfers: the heart of the product. Money columns are plain numeric holding the
-- decimal string at the asset's precision (they come back as strings on both engines).
-- Entity and destination ids are checked by their services; they carry no foreign key here so
-- that the quote and transfer tables do not depend on the order destination migrations land.

CREATE TABLE quotes (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id),
  entity_id uuid NOT NULL,
  fixed_side text NOT NULL CHECK (fixed_side IN ('FROM', 'TO')),
  amount numeric NOT NULL,
  from_rail jsonb NOT NULL,
  to_rail jsonb NOT NULL,
  -- The destination (and its version) a transfer-ready quote is bound to.
  destination_type text CHECK (destination_type IN ('FIAT_ACCOUNT', 'CRYPTO_WALLET')),
  destination_id uuid,
  destination_version integer,
  active_only boolean NOT NULL DEFAULT false,
  advisories jsonb NOT NULL DEFAULT '[]',
  created_at timestamptz(3) NOT NULL DEFAULT now()
);

CREATE INDEX quotes_by_organization ON quotes (organization_id, created_at);

CREATE TABLE quote_options (
  id uuid PRIMARY KEY,
  quote_id uuid NOT NULL REFERENCES quotes (id),
  organization_id uuid NOT NULL REFERENCES organizations (id),
  rank integer NOT NULL,
  from_asset text NOT NULL,
  to_asset text NOT NULL,
  from_amount numeric NOT NULL,
  to_amount numeric NOT NULL,
  rate text NOT NULL,
  -- [{type, amount, currency}]
  fees jsonb NOT NULL,
  total_fee numeric NOT NULL,
  fee_currency text NOT NULL,
  eta_seconds integer NOT NULL,
  -- [{position, kind, providerId, provider, fromAsset, toAsset, amountIn, amountOut, rate, rail}]
  legs jsonb NOT NULL,
  expires_at timestamptz(3) NOT NULL,
  status text NOT NULL DEFAULT 'OPEN' CHECK (status IN ('OPEN', 'USED', 'EXPIRED')),
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  UNIQUE (quote_id, rank)
);

CREATE INDEX quote_options_open_expiry ON quote_options (expires_at) WHERE status = 'OPEN';

CREATE TABLE transfers (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id),
  entity_id uuid NOT NULL,
  quote_id uuid NOT NULL REFERENCES quotes (id),
  -- One quote option makes at most one transfer, whatever the idempotency keys say.
  quote_option_id uuid NOT NULL UNIQUE REFERENCES quote_options (id),
  status text NOT NULL CHECK (status IN ('PENDING_SETUP', 'READY_TO_FUND', 'AWAITING_FUNDS', 'IN_PROGRESS', 'IN_REVIEW',
                                         'COMPLETED', 'FAILED', 'RETURNED', 'REFUNDED', 'CANCELED')),
  blocking_party text NOT NULL CHECK (blocking_party IN ('CUSTOMER', 'SERVICE_OPS', 'PROVIDER', 'NONE')),
  status_reason text,
  -- Rises with every change, so clients and webhook receivers can drop stale data.
  version integer NOT NULL DEFAULT 1,
  client_reference text,
  -- {sourceSystem, originalMessageId, originalMessageNameId, originalPaymentInformationId,
  --  originalInstructionId, originalEndToEndId}
  payment_references jsonb,
  original_message_id text,
  from_rail jsonb NOT NULL,
  to_rail jsonb NOT NULL,
  source_asset text NOT NULL,
  destination_asset text NOT NULL,
  fee_currency text NOT NULL,
  quoted_source_amount numeric NOT NULL,
  quoted_destination_amount numeric NOT NULL,
  quoted_fee_total numeric NOT NULL,
  quoted_rate text NOT NULL,
  actual_source_amount numeric,
  actual_destination_amount numeric,
  actual_fee_total numeric,
  destination_type text NOT NULL CHECK (destination_type IN ('FIAT_ACCOUNT', 'CRYPTO_WALLET')),
  destination_id uuid NOT NULL,
  destination_version integer NOT NULL,
  destination_relationship text NOT NULL CHECK (destination_relationship IN ('SELF', 'THIRD_PARTY')),
  -- The confirmed destination version's instructions, exactly as they were at creation.
  destination_snapshot jsonb NOT NULL,
  -- Sandbox only: the outcome the magic amount asked for (SUCCEED, FAIL, RETURN, REVIEW, REFUND).
  sandbox_outcome text,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now()
);

CREATE INDEX transfers_by_organization ON transfers (organization_id, created_at, id);
CREATE INDEX transfers_by_status ON transfers (organization_id, status, created_at);
CREATE INDEX transfers_by_entity ON transfers (organization_id, entity_id, created_at);
CREATE INDEX transfers_by_original_message ON transfers (organization_id, original_message_id) WHERE original_message_id IS NOT NULL;

CREATE TABLE transfer_legs (
  id uuid PRIMARY KEY,
  transfer_id uuid NOT NULL REFERENCES transfers (id),
  position integer NOT NULL,
  kind text NOT NULL CHECK (kind IN ('COLLECTION', 'CONVERSION', 'PAYOUT')),
  provider_id text NOT NULL,
  -- Customer-visible name and reference only; credentials and raw payloads never reach this table.
  provider_name text NOT NULL,
  provider_reference text,
  status text NOT NULL CHECK (status IN ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED', 'RETURNED', 'CANCELED')),
  progress_stage text NOT NULL,
  from_asset text NOT NULL,
  to_asset text NOT NULL,
  rail jsonb,
  quoted_amount_in numeric NOT NULL,
  quoted_amount_out numeric NOT NULL,
  actual_amount_out numeric,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now(),
  UNIQUE (transfer_id, position)
);

-- The timeline: one row per transfer status transition (kind STATUS) and per leg change (kind LEG).
-- Status-history reports read the STATUS rows; from_status is null on the creation row.
CREATE TABLE transfer_events (
  id uuid PRIMARY KEY,
  sequence bigserial UNIQUE NOT NULL,
  transfer_id uuid NOT NULL REFERENCES transfers (id),
  organization_id uuid NOT NULL REFERENCES organizations (id),
  kind text NOT NULL CHECK (kind IN ('STATUS', 'LEG')),
  from_status text,
  to_status text NOT NULL,
  blocking_party text NOT NULL,
  reason text,
  leg_position integer,
  leg_status text,
  progress_stage text,
  version integer NOT NULL,
  occurred_at timestamptz(3) NOT NULL DEFAULT now()
);

CREATE INDEX transfer_events_by_transfer ON transfer_events (transfer_id, sequence);
CREATE INDEX transfer_events_status_window ON transfer_events (organization_id, occurred_at, transfer_id) WHERE kind = 'STATUS';
