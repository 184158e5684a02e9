-- A write that relies on facts read earlier (by this process, moments ago) checks them again in
-- the statement that writes: each fact is a condition, and the first one that no longer holds
-- stops the whole statement with this error, so nothing it would have written is written. The
-- caller then reads the facts afresh and answers what they say (src/platform/db/guard.ts).
CREATE FUNCTION corridor_refuse(reason text) RETURNS boolean
  LANGUAGE plpgsql VOLATILE
  AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'CG001', MESSAGE = 'corridor guard: ' || reason;
END
$$;
