"""cairn: shared memory and coordination for AI agents (the package behind every function)."""

import os as _os

# A Lambda function's init (Lambda names its type), before any other module loads: see
# shared/coldstart.py. `functions/__init__.py` imports this package first.
if _os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE"):
    from shared.coldstart import begin_init as _begin_init

    _begin_init()
