"""SearchIndex / DocumentStore adapters: OpenSearch and DynamoDB in AWS, SQLite + numpy locally."""
