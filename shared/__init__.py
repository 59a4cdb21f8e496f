"""cairn: shared memory and coordination for AI agents (the package behind every function)."""

import os as _os

# Before any model module is imported: see shared/coldstart.py.
if _os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") == "on-demand":
    from shared.coldstart import defer_model_builds as _defer

    _defer()
