"""The ingestion contract: privacy (what may be stored) and redaction of secrets."""
