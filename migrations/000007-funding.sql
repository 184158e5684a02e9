-- Funding: the sessions that tell a customer where to send the money for one transfer, and the
-- proofs of payment they upload. Instructions are never reused, even on the same rail, so the
-- reference and the deposit coordinates are unique across every session ever opened, expired
-- ones included: the database, not the generator, has the last word.

CREATE TABLE funding_sessions (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id),
  transfer_id uuid NOT NULL REFERENCES transfers (id),
  status text NOT NULL CHECK (status IN ('ACTIVE', 'EXPIRED', 'COMPLETED')),
  -- The payment reference the payer quotes (fiat); crypto sessions get one too, for support.
  reference text NOT NULL,
  -- The deposit coordinates in one canonical string: virtual account, IBAN, CLABE, PIX key,
  -- deposit address, or shared Stellar account plus memo.
  deposit_key text NOT NULL,
  -- The instructions exactly as shown to the customer.
  instructions jsonb NOT NULL,
  expires_at timestamptz(3) NOT NULL,
  closed_at timestamptz(3),
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  CONSTRAINT funding_sessions_reference_unique UNIQUE (reference),
  CONSTRAINT funding_sessions_deposit_key_unique UNIQUE (deposit_key)
);

-- At most one open session per transfer.
CREATE UNIQUE INDEX funding_sessions_one_active ON funding_sessions (transfer_id) WHERE status = 'ACTIVE';
CREATE INDEX funding_sessions_due ON funding_sessions (expires_at) WHERE status = 'ACTIVE';

CREATE TABLE funding_proofs (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id),
  transfer_id uuid NOT NULL REFERENCES transfers (id),
  -- The session open when the proof arrived, if any: which instructions the payer followed.
  funding_session_id uuid REFERENCES funding_sessions (id),
  -- As the client named it; the type below comes from the file's magic bytes, never from the client.
  file_name text NOT NULL,
  content_type text NOT NULL CHECK (content_type IN ('application/pdf', 'image/jpeg', 'image/png')),
  size_bytes integer NOT NULL CHECK (size_bytes > 0),
  sha256 text NOT NULL,
  -- Relative to the data directory.
  storage_path text NOT NULL,
  uploaded_by_user_id uuid,
  uploaded_by_api_key_id uuid,
  uploaded_at timestamptz(3) NOT NULL DEFAULT now()
);

CREATE INDEX funding_proofs_by_transfer ON funding_proofs (transfer_id, uploaded_at);
