"""Team tokens, scopes, allow-lists and rate limits."""
