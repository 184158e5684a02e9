-- GET /v1/ops/transfers lists IN_REVIEW transfers across every organization, oldest first: the
-- operators' review queue. The per-organization indexes cannot serve it. Partial, so the state
-- changes of every other transfer (the hot path: each is a non-HOT update of this table) do not
-- pay for one more index; asking the queue for another status scans, which an operator can wait for.
CREATE INDEX transfers_review_queue ON transfers (created_at, id) WHERE status = 'IN_REVIEW';
