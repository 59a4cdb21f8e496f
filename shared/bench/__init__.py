"""Benchmarks (`make bench`): retrieval quality and latency; never part of `make test`."""
