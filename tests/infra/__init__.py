"""Infra tests: synthesize the CDK app and assert what matters (see conftest)."""

import infra  # noqa: F401  (silences jsii node-version banners before aws_cdk loads)
