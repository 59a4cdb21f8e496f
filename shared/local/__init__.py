"""The embedded default: moto for the AWS APIs, the embedded index, everything in one process."""
