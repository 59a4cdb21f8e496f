"""The tool model every group shares: specs, the invocation envelope, domain errors."""
