"""A team's data leaving and coming back: export, import, team deletion and backups
(docs/portability.md)."""
