-- Status-history reports read a window of STATUS events in (occurred_at, sequence) order: the
-- whole-report cursor on PostgreSQL and the keyset pages on PGlite, whose cursor is exactly that
-- pair. The window index ended in transfer_id, so every read sorted its rows again (an incremental
-- sort per page, and 7% of the backend's CPU on a million-row cursor). Ending it in sequence serves
-- the order as stored; transfer_id stays as an included column for the counts that need only it.
CREATE INDEX transfer_events_status_order ON transfer_events (organization_id, occurred_at, sequence)
  INCLUDE (transfer_id) WHERE kind = 'STATUS';
DROP INDEX transfer_events_status_window;
