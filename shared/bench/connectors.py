"""`cairn bench connectors`: how fast a git connector syncs a repository of Markdown files.

Makes a repository of `--files` Markdown notes (a few sections each) with dulwich, then, in a
fresh local data folder (SQLite, the embedded index, the local MiniLM embedder, loaded before
timing), runs the `docs` git connector as `sync {"source": "docs"}` does: a first sync (every
file read, chunked and embedded), a second at the same commit (nothing to do), and a sync after
a commit that edits a tenth of the files and deletes one. Reports files per second of each.
One JSON object on stdout; progress on stderr.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shared.bench.index import corpus_arguments, write_corpus


def _commit(repo: Any, root: Path, message: str) -> None:
    from dulwich import porcelain

    porcelain.add(repo, [str(p) for p in root.rglob("*.md")])
    identity = b"Bench <bench@example.com>"
    porcelain.commit(repo, message.encode(), author=identity, committer=identity)


def run(files: int, sections: int, *, progress: bool = True) -> dict[str, Any]:
    from dulwich import porcelain
    from dulwich.refs import Ref

    from shared import runtime
    from shared.app.sync_service import build_sync_service
    from shared.auth.principal import Principal
    from shared.config.settings import Settings
    from shared.search.wiring import build_search_service

    def say(message: str) -> None:
        if progress:
            print(message, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="cairn-bench-connectors-") as work:
        root = Path(work) / "repo"
        write_corpus(root, files, sections)
        repo = porcelain.init(str(root))
        repo.refs.set_symbolic_ref(Ref(b"HEAD"), Ref(b"refs/heads/main"))
        _commit(repo, root, "corpus")
        data_dir = Path(work) / "data"
        data_dir.mkdir()
        runtime.configure(
            Settings(
                environment="local", storage="sqlite", token_pepper="b" * 32, data_dir=data_dir
            )
        )
        try:
            build_search_service().embedder.embed(["warm the model up"])  # load it untimed
            service = build_sync_service()
            service.connector_add(
                "local", name="docs", kind="git", config={"url": root.resolve().as_uri()}
            )
            bench = "bench"  # the caller's token id and name: no secret
            principal = Principal(
                team="local", token_id=bench, token_name=bench, scopes=frozenset({"sync"})
            )

            def timed(label: str) -> dict[str, Any]:
                say(f"{label} ...")
                started = time.perf_counter()
                out = service.sync(principal, source="docs", lock=True, background=False)
                seconds = time.perf_counter() - started
                assert out.connectors is not None
                (result,) = out.connectors
                if not result.success:
                    raise RuntimeError(result.message)
                seen = result.stats.entities_seen or files
                return {
                    "seconds": round(seconds, 3),
                    "files": seen,
                    "files_per_second": round(seen / seconds, 3),
                    "chunks_written": result.stats.chunks_written,
                    "tombstoned": result.stats.entities_tombstoned,
                }

            first = timed("first sync")
            unchanged = timed("unchanged commit")
            for number in range(0, files, 10):
                note = root / f"runbook-{number:03d}.md"
                note.write_text(note.read_text() + "\nEdited for the bench.\n")
            porcelain.remove(repo, [str(root / f"runbook-{files - 1:03d}.md")])
            _commit(repo, root, "edit a tenth, delete one")
            edited = timed("after editing a tenth")
        finally:
            repo.close()
            runtime.configure(Settings())
    return {
        "files": files,
        "sections": sections,
        "first_sync": first,
        "unchanged_commit": unchanged,
        "edit_a_tenth": edited,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `cairn bench connectors`."""
    args = corpus_arguments(
        "cairn bench connectors", __doc__, argv, files=300, sections=1, min_files=2
    )
    print(json.dumps(run(args.files, args.sections, progress=not args.quiet)))
    return 0
