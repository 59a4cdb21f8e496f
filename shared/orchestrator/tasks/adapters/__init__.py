"""The task store's adapters. `DynamoTaskStore` is re-exported for callers of the old module."""

from shared.orchestrator.tasks.adapters.dynamodb import DynamoTaskStore

__all__ = ["DynamoTaskStore"]
