"""The AWS CDK app of cairn: `app.py` composes one stack per environment out of one construct
per concern (data, search, functions, api, workflows, sync, observability)."""
