-- The transfer engine: what the execution steps need beside migration 5's tables, and the
-- double-entry ledger every money movement is posted to.

-- When the customer's funds arrived (set once, by the move into IN_PROGRESS). Cancel is allowed
-- only before it, and a review resolves to IN_PROGRESS or a refund depending on it.
ALTER TABLE transfers ADD COLUMN funds_received_at timestamptz(3);
-- When operations staff resolved a review, so an approved transfer is not sent to review again.
ALTER TABLE transfers ADD COLUMN reviewed_at timestamptz(3);

-- What the engine actually handed the provider (quoted_amount_in is what the quote said).
ALTER TABLE transfer_legs ADD COLUMN actual_amount_in numeric;
-- The leg's quoted fee, in its from_asset (amount_in − fee is what the leg moves on or converts).
ALTER TABLE transfer_legs ADD COLUMN quoted_fee numeric NOT NULL DEFAULT 0;
-- The rate the quote locked for the leg (units of to_asset per from_asset; "1" unless CONVERSION).
ALTER TABLE transfer_legs ADD COLUMN quoted_rate text NOT NULL DEFAULT '1';
-- Customer-safe reason a provider gave for FAILED or RETURNED.
ALTER TABLE transfer_legs ADD COLUMN status_reason text;

-- The transfer exactly as GET /v1/transfers/{id} shows it (without funding instructions), kept in
-- step by the same statement that records each change, so a read is one primary-key lookup
-- instead of an aggregate over legs and timeline. Null on rows written by other means; readers
-- then build it from the tables.
ALTER TABLE transfers ADD COLUMN api_view jsonb;

-- Engine-owned transfers (setup and execution) are swept after a restart; this finds them fast.
CREATE INDEX transfers_engine_owned ON transfers (updated_at) WHERE status IN ('PENDING_SETUP', 'IN_PROGRESS');

-- The chart of accounts. Each account holds a balance per currency; postings carry the currency.
CREATE TABLE ledger_accounts (
  code text PRIMARY KEY,
  description text NOT NULL
);

INSERT INTO ledger_accounts (code, description) VALUES
  ('CUSTOMER_EXTERNAL', 'The customer''s money outside the service: funds come from it, refunds go back to it (per organization)'),
  ('CUSTOMER_FUNDS_HELD', 'Customer money received for a transfer and held at providers until it is delivered or given back'),
  ('FX_CLEARING', 'Conversions: each currency leg of an exchange passes through it, so every entry balances per currency'),
  ('FEE_REVENUE', 'Fees earned on delivered transfers'),
  ('PAYOUT_IN_TRANSIT', 'Payouts handed to a rail and not yet settled with the beneficiary''s bank'),
  ('BENEFICIARY_EXTERNAL', 'Money delivered to beneficiaries outside the service (per organization)');

-- One entry per money movement. The key makes posting idempotent: a retried step that posts the
-- same movement again finds the entry and adds nothing.
CREATE TABLE ledger_entries (
  id uuid PRIMARY KEY,
  entry_key text NOT NULL UNIQUE,
  organization_id uuid NOT NULL REFERENCES organizations (id),
  transfer_id uuid REFERENCES transfers (id),
  kind text NOT NULL CHECK (kind IN ('FUNDS_IN', 'FEE', 'CONVERSION', 'PAYOUT_SENT', 'PAYOUT_SETTLED', 'PAYOUT_RETURNED', 'FEE_REVERSAL', 'RETURN_TO_CUSTOMER', 'REFUND')),
  description text NOT NULL,
  created_at timestamptz(3) NOT NULL DEFAULT now()
);

CREATE INDEX ledger_entries_by_transfer ON ledger_entries (transfer_id, created_at);

-- Signed amounts: positive is value flowing into the account, negative out of it (one reading for
-- every account). Every entry sums to zero per currency.
CREATE TABLE ledger_postings (
  id uuid PRIMARY KEY,
  entry_id uuid NOT NULL REFERENCES ledger_entries (id),
  organization_id uuid NOT NULL REFERENCES organizations (id),
  transfer_id uuid REFERENCES transfers (id),
  account text NOT NULL REFERENCES ledger_accounts (code),
  currency text NOT NULL,
  amount numeric NOT NULL CHECK (amount <> 0),
  created_at timestamptz(3) NOT NULL DEFAULT now()
);

CREATE INDEX ledger_postings_by_entry ON ledger_postings (entry_id);
CREATE INDEX ledger_postings_by_transfer ON ledger_postings (transfer_id, account, currency);
CREATE INDEX ledger_postings_by_account ON ledger_postings (account, currency);

-- The database refuses an unbalanced entry at commit, whatever the code above it does.
CREATE FUNCTION ledger_entry_balances() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  unbalanced text;
BEGIN
  SELECT currency INTO unbalanced FROM ledger_postings
   WHERE entry_id = NEW.entry_id GROUP BY currency HAVING sum(amount) <> 0 LIMIT 1;
  IF unbalanced IS NOT NULL THEN
    RAISE EXCEPTION 'ledger entry % does not balance in %', NEW.entry_id, unbalanced;
  END IF;
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER ledger_postings_balance
  AFTER INSERT OR UPDATE ON ledger_postings
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION ledger_entry_balances();
