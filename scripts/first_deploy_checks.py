"""Before the first real deploy: run the checks of infra/first_deploy.py against a deployed
stack and print what passed (docs/infra/first-deploy.md).

    uv run python scripts/first_deploy_checks.py --stack cairn-staging [--access-token <jwt>]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from infra.first_deploy import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
