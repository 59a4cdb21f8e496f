"""The Lambda functions: `functions.<name>.handler` is each one's entry point.

The first module of every init: it loads `shared`, which pauses the garbage collector (and
defers model builds) before anything else loads, until the handler module's last line,
`end_init()`, resumes it. See shared/coldstart.py.
"""

import shared  # noqa: F401 - for its init-time side effect, first
