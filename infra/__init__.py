"""The AWS CDK app of cairn: `app.py` composes one stack per environment out of one construct
per concern (data, search, functions, api, workflows, sync, observability)."""

import os as _os

# jsii prints a banner about the node version on every run (the value lists the node majors to
# silence); synth output stays quiet. The CDK CLI itself is pinned in package.json.
for _warning in ("END_OF_LIFE", "DEPRECATED", "UNTESTED"):
    _os.environ.setdefault(
        f"JSII_SILENCE_WARNING_{_warning}_NODE_VERSION", ",".join(map(str, range(18, 30)))
    )
