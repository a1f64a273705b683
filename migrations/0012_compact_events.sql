-- 0012: a smaller file, and one covering index (spec/canonical-event.md "Stored payload"). The index on (kind,
-- retracted) served only lookups of the rare kinds (corrections, retractions, denials, wiring
-- checks) and of retracted events, yet held an entry for every event: it keeps those alone now.
-- (New rows also store their raw payload's shared texts once: attemptdb/model/payload.py; rows
-- already written keep theirs whole, which reads the same.)
DROP INDEX events_kind;
CREATE INDEX events_kind ON events (kind, retracted)
  WHERE kind = 'correction' OR kind = 'retraction' OR kind = 'permission_denied' OR kind = 'capture_test'
     OR retracted = 1;

-- STATE … AT t picks its units off the members active in the 12 h before t: their start and unit
-- read from this index alone.
DROP INDEX unit_turns_active;
CREATE INDEX unit_turns_active ON unit_turns (active_until, started_at, work_unit_id);
