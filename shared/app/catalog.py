"""The catalog the gateway serves, from the generated file a bundle carries or from the live
groups; and the command that generates that file at build time.

`python -m shared.app.catalog OUT` writes the catalog the groups' models make to OUT.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from shared.tools.catalog import (
    CATALOG_FILE,
    CATALOG_FILE_ENV,
    ToolCatalog,
    generated_catalog,
    render,
)


def gateway_catalog() -> ToolCatalog:
    """The generated catalog where there is one (a bundle), else the one the live groups make."""
    path = Path(os.environ.get(CATALOG_FILE_ENV) or CATALOG_FILE)
    if path.is_file():
        return generated_catalog(path)
    from shared.app.groups import load_catalog  # not in Lambda

    return load_catalog()


def main(argv: list[str]) -> int:
    """Write the catalog the groups' models make to `argv[0]`."""
    from shared.app.groups import load_catalog  # not in Lambda: run at build time

    if len(argv) != 1:
        sys.stderr.write("usage: python -m shared.app.catalog OUT\n")
        return 2
    catalog = load_catalog()
    Path(argv[0]).write_text(render(catalog))
    sys.stdout.write(f"wrote {argv[0]} ({len(catalog)} tools)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
