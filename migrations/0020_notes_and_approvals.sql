-- 0020: notes and approvals read back (spec/evidence.md §5). `attempt note`, `attempt
-- approve|reject` and the Recorder recorded them as events (session.note_added, ai.approval),
-- but only SQL over `events` read them again. The public views `notes` and `approvals`
-- (sql/88_notes.sql) list them, one row per event a Retraction did not remove, and AttemptQL
-- reads them as SHOW NOTES / SHOW APPROVALS. This partial index holds those events alone (no
-- agent's hook event enters it), so both views and every SHOW of them read a range of it, never
-- the whole log; a file written before builds it from its events here, once.
CREATE INDEX IF NOT EXISTS events_notes ON events (provider_event_name, observed_at)
  WHERE kind = 'notification' AND provider = 'attempt';
