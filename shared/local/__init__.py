"""The embedded default: SQLite stores, the embedded index, everything in one process."""
