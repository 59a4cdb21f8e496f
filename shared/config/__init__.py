"""Configuration shared by the runtime, the CDK app and the tests."""
