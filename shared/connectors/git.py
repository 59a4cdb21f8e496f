"""The `git` kind: a branch of any git repository, read with dulwich (pure Python).

Why dulwich: the Lambda Python runtime has no `git` binary, and a host's archive API
(GitHub's tarball, GitLab's archive) covers one host each and re-downloads the whole tree on
every change. dulwich speaks git's own protocols (smart HTTP with a token, ssh through the
machine's `ssh` client and keys where there is one, `file://`) from Python, so the same code
runs in `cairn serve` and the sync runner.

A sync asks the remote for the branch's commit first (one ref listing): the commit the last
sync finished at means nothing changed, and the sync ends there. Otherwise it fetches what the
local cache lacks into a bare repository (the data folder locally, /tmp in Lambda, where a cold
start fetches it whole) and lists the commit's files with their blob ids, which are content
hashes: only blobs whose id changed are read. A force-push or a branch change is just another
commit. The token (from an environment variable or Secrets Manager) is handed to the client as
a password, never put in a URL, a message or a log line.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from shared.connectors.documents import matches, skipped_path
from shared.connectors.models import (
    ConnectorError,
    Fetched,
    GitSettings,
    Listing,
    SourceItem,
    safe_url,
)

logger = logging.getLogger("cairn.connectors")
# ssh never asks (a password, a new host key): it fails, and the sync reports it.
_SSH_COMMAND = "ssh -o BatchMode=yes"


class GitSource:
    """`Source` over one branch of one repository."""

    def __init__(self, settings: GitSettings, cache: Path, token: str | None) -> None:
        self._settings = settings
        self._cache = cache
        self._token = token
        self._repo: Any = None
        self._commit: bytes | None = None
        self._where = safe_url(settings.url)

    def _client(self) -> tuple[Any, str]:
        from dulwich.client import SSHGitClient, SubprocessSSHVendor, get_transport_and_path

        parsed = urlparse(self._settings.url)
        if parsed.scheme == "ssh":
            # The machine's `ssh` and its keys (the user is the URL's, `ssh://git@host/...`),
            # never a prompt: a server has no one to answer it. GIT_SSH_COMMAND still wins.
            command = os.environ.get("GIT_SSH_COMMAND") or _SSH_COMMAND
            client = SSHGitClient.from_parsedurl(
                parsed, vendor=SubprocessSSHVendor(), ssh_command=command, quiet=True
            )
            return client, parsed.path
        username = self._settings.username if self._token else None
        return get_transport_and_path(
            self._settings.url, username=username, password=self._token, quiet=True
        )

    def _fail(self, what: str, exc: BaseException) -> ConnectorError:
        # The exception's text may quote the URL a client built (with the password, for
        # some transports): only its kind is told, with our own words for the rest.
        cause = type(exc).__name__
        if isinstance(exc, (FileNotFoundError, NotADirectoryError)) or "NotGitRepository" in cause:
            cause = "no git repository there"
        elif "Unauthorized" in cause or "403" in str(exc) or "401" in str(exc):
            cause = "the server refused the credentials"
        return ConnectorError(f"{what} {self._where}: {cause}")

    def _remote_commit(self) -> bytes:
        branch_ref = f"refs/heads/{self._settings.branch}".encode()
        try:
            client, path = self._client()
            refs = client.get_refs(path.encode() if isinstance(path, str) else path).refs
        except Exception as exc:
            raise self._fail("cannot read the branches of", exc) from None
        commit = refs.get(branch_ref)
        if commit is None:
            raise ConnectorError(
                f"the repository {self._where} has no branch {self._settings.branch!r}"
            )
        return bytes(commit)

    def _open_cache(self) -> Any:
        from dulwich.repo import Repo

        if (self._cache / "HEAD").exists():
            try:
                return Repo(str(self._cache))
            except Exception:  # a cache left broken by a crash: start it again
                shutil.rmtree(self._cache, ignore_errors=True)
        self._cache.mkdir(parents=True, exist_ok=True)
        return Repo.init_bare(str(self._cache))

    def list(self, cursor: str | None) -> Listing | None:
        commit = self._remote_commit()
        if cursor == self._cursor(commit):
            logger.debug("git connector unchanged", extra={"commit": commit.decode()})
            return None
        repo = self._open_cache()
        self._repo = repo
        if commit not in repo.object_store:
            try:
                client, path = self._client()
                client.fetch(path, repo, determine_wants=lambda refs, depth=None: [commit])
            except Exception as exc:
                raise self._fail("cannot fetch from", exc) from None
        from dulwich.object_store import iter_tree_contents

        items: list[SourceItem] = []
        hidden = 0
        tree = repo[commit].tree
        for entry in iter_tree_contents(repo.object_store, tree):
            if entry.path is None or entry.sha is None or entry.mode is None:
                continue
            if entry.mode & 0o170000 != 0o100000:  # submodules and symlinks: not files here
                continue
            path = entry.path.decode("utf-8", errors="replace")
            if skipped_path(path):
                hidden += 1
                continue
            if not matches(path, self._settings.globs):
                continue
            # The size is known once read (the blob's header is in its pack): checked then.
            items.append(SourceItem(id=path, version=entry.sha.decode(), uri=self.uri(path)))
        self._commit = commit
        return Listing(items=items, cursor=self._cursor(commit), skipped={"hidden": hidden})

    def _cursor(self, commit: bytes) -> str:
        # The settings that choose the files are part of the cursor: a changed branch or globs
        # (`connectors add --replace`) lists again even at the same commit.
        chosen = f"{self._settings.branch}\0{'|'.join(self._settings.globs)}"
        return f"{commit.decode()}:{hashlib.sha256(chosen.encode()).hexdigest()[:12]}"

    def read(self, item: SourceItem, known: str | None) -> Fetched:
        assert self._repo is not None
        assert item.version is not None
        blob = self._repo[item.version.encode()]
        return Fetched(data=blob.as_raw_string(), version=item.version)

    def uri(self, path: str) -> str:
        return f"{self._where}#{self._settings.branch}:{path}"

    def close(self) -> None:
        if self._repo is not None:
            self._repo.close()
            self._repo = None
