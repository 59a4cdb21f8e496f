"""What a function's cold start leaves out: pydantic's model building, and garbage collection.

A module of models builds every model's validator and serializer as its class is defined. A
group function imports every model of its tools (and of the services they reach) at init, but
one invocation uses a handful. With `defer_model_builds` each model is built at its first use
instead (pydantic's `defer_build`, made the default for models that do not set it), so a cold
start pays for the models its call needs. Behaviour is unchanged: a deferred model builds
itself the first time it validates, serializes or gives its JSON schema.

It is worth it only where init is not snapshotted: `shared/__init__.py` applies it when Lambda
says the init is `on-demand`. Under SnapStart (the gateway) or provisioned concurrency the init
runs before any request, and eager building keeps that work out of the first call.
"""

from __future__ import annotations

import gc
import os

INIT_TYPE_ENV = "AWS_LAMBDA_INITIALIZATION_TYPE"


def wanted(environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """True in a Lambda function initialized on demand (no snapshot, no provisioned init)."""
    return environ.get(INIT_TYPE_ENV) == "on-demand"


def defer_model_builds() -> None:
    """Make `defer_build=True` pydantic's default for every model defined from now on.

    Pydantic reads a model's config from `config_defaults` for every key the model does not
    set; there is no public switch for the default (the version is pinned in uv.lock, and
    tests/unit/test_coldstart.py fails if this stops deferring).
    """
    from pydantic._internal import _config

    _config.config_defaults["defer_build"] = True


# Garbage collection during init. Loading a function's modules allocates 45-90k objects that
# live as long as the container, and the cyclic collector traverses them again and again while
# they pile up: 16-51 ms of a 260-550 ms init in 110-190 collections, a full one about 20 ms
# (measured with gc.callbacks; `import boto3` alone spends 13 ms). None of it frees anything.
# So `shared/__init__.py`, the first module of every init, pauses the collector, and each
# handler module's last line, `end_init()`, freezes what init built into the permanent
# generation (never traversed again, so later collections are cheaper too) and resumes it.


def begin_init(environ: dict[str, str] | os._Environ[str] = os.environ) -> None:
    """What `shared/__init__.py` does first in a Lambda function's init, before any other
    module loads: pause the collector and, on demand, defer model builds."""
    gc.disable()
    if wanted(environ):
        defer_model_builds()


def end_init() -> None:
    """The end of a handler module's init: freeze what it built, collect from now on."""
    gc.freeze()
    gc.enable()
