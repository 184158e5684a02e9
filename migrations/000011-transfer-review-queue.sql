-- GET /v1/ops/transfers lists one status (IN_REVIEW by default) across every organization,
-- oldest first: the operators' review queue. The per-organization indexes cannot serve it.
CREATE INDEX transfers_review_queue ON transfers (status, created_at, id);
