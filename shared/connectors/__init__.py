"""Connectors: bring documents from outside into the search service."""
