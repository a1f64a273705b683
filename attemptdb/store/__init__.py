"""The file: open/migrate, schema install and integrity, read-only gate, location."""
