"""Importers: ways history enters the store besides a live hook (JSONL streams, transcripts)."""
