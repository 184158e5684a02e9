-- Asynchronous reports (SPEC.md "Report", DECISIONS.md §8). The record outlives its artifact:
-- artifacts are deleted seven days after generation, the row stays for audit and diagnostics.

CREATE TABLE reports (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id),
  status text NOT NULL CHECK (status IN ('PENDING', 'READY', 'FAILED')),
  schema_version text NOT NULL,
  -- The generator that must produce this report, fixed at creation: a retried or recovered
  -- generation keeps the format the client pinned its import to.
  profile_version text NOT NULL,
  type text NOT NULL CHECK (type IN ('TRANSFER_ACTIVITY', 'TRANSFER_STATUS_HISTORY')),
  format text NOT NULL CHECK (format IN ('CSV', 'ISO20022_PAIN_002_001_03')),
  detail_level text NOT NULL CHECK (detail_level IN ('SUMMARY', 'EXECUTION_PATH')),
  filters jsonb NOT NULL,
  error_code text,
  error_message text,
  created_by_user_id uuid,
  created_by_api_key_id uuid,
  -- Generation bookkeeping. A worker holds a lease while it generates and renews it; a lease
  -- that lapses means the worker died, and recovery dispatches the report again.
  attempts integer NOT NULL DEFAULT 0,
  lease_token uuid,
  lease_expires_at timestamptz(3),
  -- Where the artifact is kept (local path or object key), and what it is.
  artifact_key text,
  artifact_content_type text,
  artifact_size_bytes bigint,
  artifact_sha256 text,
  artifact_row_count bigint,
  artifact_expires_at timestamptz(3),
  artifact_deleted_at timestamptz(3),
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  generated_at timestamptz(3),
  updated_at timestamptz(3) NOT NULL DEFAULT now()
);

CREATE INDEX reports_by_organization ON reports (organization_id, created_at, id);
CREATE INDEX reports_pending ON reports (created_at) WHERE status = 'PENDING';
CREATE INDEX reports_artifacts_to_expire ON reports (artifact_expires_at) WHERE artifact_key IS NOT NULL AND artifact_deleted_at IS NULL;

-- The key that signs download links. One row, created on first use; kept in the database so
-- every process serving the same store signs and verifies with the same key.
CREATE TABLE report_download_keys (
  id integer PRIMARY KEY CHECK (id = 1),
  secret bytea NOT NULL,
  created_at timestamptz(3) NOT NULL DEFAULT now()
);
