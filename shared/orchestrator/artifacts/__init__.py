"""Seed 000's artifact.* tools: files a task produces or consumes, bytes apart from the record.

The record lives in the coordination table, the bytes behind the `ArtifactBlobs` port (S3 in
AWS, a folder of the data dir locally). See docs/orchestrator.md ("Artifacts").
"""
