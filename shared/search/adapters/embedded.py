"""The embedded search index: SQLite FTS5 for BM25, exact vector search in numpy.

Everything lives in one SQLite file (`<data_dir>/search/index.sqlite3`): chunk rows with their
vectors as float32 blobs, and one FTS5 table per team (porter stemming) over title and text.
A table per team is what keeps ranking private: BM25's statistics (document count, average
length, each term's document frequency) are the table's, so one team's documents never move
another team's scores, nor tell it which words another team's corpus holds. Vector search
is a dot product against a per-team matrix held in memory, built from the blobs on first use
and rebuilt after that team's next write. One lock serialises writers; readers use their own
connection per thread (WAL mode) and never wait for each other.
"""

from __future__ import annotations

import hashlib
import math
import re
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shared.search.fusion import (
    FusionConfig,
    coverage,
    fuse_page,
    query_stems,
)
from shared.search.models import (
    INDEXED_TYPES,
    ChunkDoc,
    ChunkHit,
    EntityHits,
    IndexPage,
    IndexQuery,
    SearchFilters,
    query_vector,
)
from shared.search.text import query_terms
from shared.search.threads import LazyPool
from shared.storage.sqlite import ThreadConnections

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from shared.search.ports import Vectors

INDEX_FILE = "index.sqlite3"
# Bumped whenever the tables change shape. The index is derived data: a file of another version
# is dropped and recreated empty, and `embeddings_build` (rebuild) refills it from DynamoDB;
# version 2 (one FTS table for all teams) is migrated in place from its chunk rows.
SCHEMA_VERSION = 3
_SHARED_FTS_VERSION = 2
_COLUMNS = (
    "team, entity_id, chunk_id, chunk_index, text, title, source, result_type, chunk_type, uri, "
    "char_offset_start, char_offset_end, memory_key, tags, expires_at"
)
# Where the coverage's words sit in a row of `_COLUMNS`.
_TEXT, _TITLE, _TAGS = 4, 5, 13
_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY,
    team TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    chunk_id TEXT NOT NULL,
    chunk_index INTEGER NOT NULL,
    text TEXT NOT NULL,
    title TEXT NOT NULL,
    source TEXT NOT NULL,
    result_type TEXT NOT NULL,
    chunk_type TEXT NOT NULL,
    uri TEXT,
    char_offset_start INTEGER NOT NULL,
    char_offset_end INTEGER NOT NULL,
    memory_key TEXT,
    tags TEXT NOT NULL,
    expires_at REAL,
    vector BLOB NOT NULL,
    UNIQUE (team, chunk_id)
);
CREATE INDEX IF NOT EXISTS chunks_by_entity ON chunks (team, entity_id, chunk_index);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
# FTS5's tokenizer for the teams' tables; the query words are read through the same one
# (`_fts_tokens`), so a word's postings are looked up under the token FTS5 would match.
_TOKENIZE = "porter unicode61 remove_diacritics 2"
_FTS_SCHEMA = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5 ("
    f"scope, title, text, tokenize = '{_TOKENIZE}')"
)
# Below this many chunks in the index, BM25 keeps every query term (pruning only saves time
# at scale, and on a tiny index every term is "common").
PRUNE_FROM_ROWS = 2_000
# BM25 is scored in numpy from the words' postings (`_bm25_scored`) rather than by FTS5's
# bm25() over every matching row (~4 µs a row: 48 ms of CPU for a 100k-chunk query, 2 ms in
# numpy once its words are cached). Same scores to the bit, so the same rows in the same
# order (tests/unit/search/test_embedded_bm25_postings.py); False forces the one-statement
# plan, which stays the fallback for a word FTS5 reads as several tokens.
SCORE_POSTINGS = True
# Postings kept per team, in entries (a row holding a word): this many per chunk (8 bytes
# each: 1/6 of the memory the team's vectors take), least recently asked words dropped first.
_POSTINGS_PER_ROW = 32
_MIN_POSTINGS = 1 << 16
# Rows a hybrid query reads at once for the cut-off's evidence (`query`): about what a page
# of 20 asks, most of the time, against the 300 BM25 rows it could ask.
_READ_AHEAD = 64
# Query words whose FTS5 tokens are remembered (the map is cleared when full).
_TOKEN_MEMO = 50_000
# A word that could be (or stem to) a scope column token: "s"/"r" and 24 hex characters.
_SCOPE_SHAPED = re.compile(r"[sr][0-9a-f]{20,}")
# FTS5's bm25() (fts5_aux.c): each query phrase adds idf · f·(k1 + 1) / (f + k1·(1 - b + b·D/avgdl))
# for its weighted frequency f in a row of D tokens (all columns), avgdl the table's mean D.
_BM25_K1 = 1.2
_BM25_B = 0.75


def _bm25_idf(rows: int, df: int) -> float:
    """FTS5's IDF of a phrase in `df` of `rows` rows (clamped to 1e-6 like fts5_aux.c)."""
    idf = math.log((rows - df + 0.5) / (df + 0.5))
    return idf if idf > 0 else 1e-6


# The threads that run the vector leg of a hybrid query beside the caller's thread: one pool
# for the process, every index sharing it. A leg waits only for its query's embedding, which
# runs on the search service's own pool and waits on nothing, so a full pool only queues (no
# deadlock). Four threads: four queries' legs at once; each is milliseconds of numpy, which
# releases the GIL.
_QUERY_LEGS = LazyPool(workers=4, name="cairn-query-leg")


def _varints(blob: bytes) -> npt.NDArray[np.int64]:
    """The SQLite varints packed in `blob`, as FTS5 writes row sizes and totals (values below
    2^56: a varint of nine bytes, which FTS5 never writes for a token count, is not read)."""
    import numpy as np

    data = np.frombuffer(blob, dtype=np.uint8)
    ends = np.flatnonzero(data < 0x80)
    starts = np.concatenate(([0], ends[:-1] + 1)).astype(np.int64)
    lengths = ends - starts + 1
    values = np.zeros(len(ends), dtype=np.int64)
    for k in range(int(lengths.max()) if len(lengths) else 0):
        longer = lengths > k
        values[longer] = values[longer] * 128 + (data[starts[longer] + k] & 0x7F)
    return values


def _weighted_count(
    in_title: npt.NDArray[np.int64],
    in_text: npt.NDArray[np.int64],
    title_weight: float,
    text_weight: float,
) -> npt.NDArray[np.float64]:
    """bm25()'s f for rows holding a token `in_title` times in the title and `in_text` in the
    text: FTS5 adds each instance's column weight in turn, title ones first. For whole-number
    weights (the defaults) the products are those sums exactly; other weights are added in
    FTS5's order, so their rounding is its too."""
    import numpy as np

    if float(title_weight).is_integer() and float(text_weight).is_integer():
        return title_weight * in_title.astype(np.float64) + text_weight * in_text
    f = np.zeros(len(in_title), dtype=np.float64)
    for count, weight in ((in_title, title_weight), (in_text, text_weight)):
        for k in range(int(count.max()) if len(count) else 0):
            f[count > k] += weight
    return f


def _key(prefix: str, value: str) -> str:
    return prefix + hashlib.sha256(value.encode()).hexdigest()[:24]


def fts_table(team: str) -> str:
    """The name of `team`'s FTS5 table: its BM25 statistics are that team's alone.

    Hashing makes any team name a safe SQL identifier (and two teams cannot collide);
    results are also checked against the team's exact row set.
    """
    return "fts_" + _key("t", team)


def scope_tokens(source: str, result_type: str) -> str:
    """FTS tokens of a chunk's source and result type, so those filters are part of the MATCH."""
    return f"{_key('s', source)} {_key('r', result_type)}"


def scope_match(filters: SearchFilters) -> str:
    """The MATCH clauses (each starting " AND ") that keep `filters`' source and result types."""
    scope = ""
    if filters.source is not None:
        scope += f" AND scope : {_key('s', filters.source)}"
    if filters.types != INDEXED_TYPES:
        wanted = " OR ".join(_key("r", t) for t in sorted(filters.types))
        scope += f" AND scope : ({wanted})"
    return scope


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


@dataclass(frozen=True)
class _Postings:
    """The rows holding one token in title or text: their positions in the team's row order
    and the token's weighted count in each (the f bm25() sums: title_weight per title hit,
    text_weight per text hit, in FTS5's order). Held small: int32 positions, and float32
    counts where float32 holds them exactly (whole-number weights: always), else float64."""

    positions: npt.NDArray[np.int32]
    frequencies: npt.NDArray[np.float32] | npt.NDArray[np.float64]


@dataclass
class _TeamTerms:
    """What FTS5's bm25() reads of a team's table, held to score BM25 in numpy (`_bm25_scored`).

    `rows` is the table's row count (the IDF's N) and `length_norms` each row's
    k1·(1 - b + b·D/avgdl), in the team's row order, both read from FTS5's own shadow tables
    (`%_docsize`, the averages record) as of the team's last write. The postings of the
    tokens asked since are cached here, up to `budget` entries, least recently asked dropped.
    """

    rows: int
    length_norms: npt.NDArray[np.float64]
    budget: int
    postings: OrderedDict[str, _Postings] = field(default_factory=OrderedDict)
    held: int = 0


@dataclass
class _TeamVectors:
    """A team's rows in memory, in rowid order: vectors and what the filters test.

    Sources and result types are held as small integer codes (one per distinct value), so a
    filter is an integer comparison over the array rather than a string comparison per row
    (`np.isin` over an object array cost 16 ms per query at 100k chunks).
    """

    rowids: npt.NDArray[np.int64]
    matrix: npt.NDArray[np.float32]
    entity_ids: list[str]
    source_codes: dict[str, int]
    sources: npt.NDArray[np.int32]
    type_codes: dict[str, int]
    types: npt.NDArray[np.int32]
    expires: npt.NDArray[np.float64]
    min_expiry: float
    position: dict[int, int]
    # Read on the first BM25 query; `terms_unusable`: the shadow tables did not add up (then
    # BM25 keeps to FTS5's own statement).
    terms: _TeamTerms | None = None
    terms_unusable: bool = False

    def row_positions(self, rowids: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
        """Where each of `rowids` (ascending) sits in the team's rows; -1 if not the team's."""
        import numpy as np

        n = len(self.rowids)
        if n == 0:
            return np.full(len(rowids), -1, dtype=np.intp)
        if int(self.rowids[-1]) - int(self.rowids[0]) == n - 1:
            # The team's rows are one run of rowids (a team that has the index to itself).
            at = (rowids - self.rowids[0]).astype(np.intp)
            return np.where((at >= 0) & (at < n), at, -1)
        at = np.searchsorted(self.rowids, rowids).astype(np.intp)
        found = (at < n) & (self.rowids[np.minimum(at, n - 1)] == rowids)
        return np.where(found, at, -1)

    def live(self, filters: SearchFilters) -> npt.NDArray[np.bool_] | None:
        """The rows `filters` keep (source, result type, not expired); None: every row."""
        import numpy as np

        mask: npt.NDArray[np.bool_] | None = None
        if self.min_expiry <= filters.now:
            mask = self.expires > filters.now
        if filters.source is not None:
            code = self.source_codes.get(filters.source, -1)
            mask = self.sources == code if mask is None else mask & (self.sources == code)
        if filters.types != INDEXED_TYPES and set(self.type_codes) - filters.types:
            wanted = [self.type_codes[t] for t in filters.types if t in self.type_codes]
            kept = np.isin(self.types, np.array(wanted, dtype=np.int32))
            mask = kept if mask is None else mask & kept
        return mask


@dataclass(frozen=True)
class EmbeddedConfig:
    """BM25 column weights (title vs text) and fusion settings, tuned on SciFact train.

    A title match counts three times a body match: +0.003 nDCG@10 for BM25 alone on train and
    +0.004 fused (titles are short, so a hit there says more about the whole document).
    """

    title_weight: float = 3.0
    text_weight: float = 1.0
    fusion: FusionConfig = field(default_factory=FusionConfig)


class EmbeddedIndex:
    """`SearchIndex` over SQLite FTS5 + numpy, persisted under `directory`."""

    def __init__(
        self, directory: Path, dimensions: int, config: EmbeddedConfig | None = None
    ) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / INDEX_FILE
        self.dimensions = dimensions
        self.config = config or EmbeddedConfig()
        self._write_lock = threading.Lock()
        self._cache_lock = threading.Lock()
        # Readers per running thread, pooled: never one opened per thread that comes and goes.
        self._readers = ThreadConnections(self._connect)
        self._vectors: dict[str, _TeamVectors] = {}
        # Per team: document frequencies of query terms and the row count, valid until that
        # team's next write (another team's writes never touch them).
        self._df: dict[tuple[str, str], int] = {}
        # Query words → the FTS5 token they match (None: not one token), any team.
        self._token_of: dict[str, str | None] = {}
        self._rows: dict[str, int] = {}
        # Bumped by each write of a team: a count read before a write commits is stored only
        # if no write was invalidated meanwhile (else it would outlive the invalidation).
        self._writes: dict[str, int] = {}
        # The teams' FTS tables readers may query: only committed ones. A table created by the
        # open write transaction waits in `_created_fts` until its COMMIT, since a reader's
        # connection cannot see it before then ("no such table").
        self._fts_tables: set[str] = set()
        self._created_fts: set[str] = set()
        self._writer = self._connect()
        with self._write_lock:
            version = int(self._writer.execute("PRAGMA user_version").fetchone()[0])
            if version == _SHARED_FTS_VERSION:
                self._split_shared_fts()
            elif version != SCHEMA_VERSION:
                for table in self._virtual_tables():
                    self._writer.execute(f"DROP TABLE IF EXISTS {table}")
                self._writer.executescript("DROP TABLE IF EXISTS chunks;")
            self._writer.executescript(_SCHEMA)
            self._writer.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self._fts_tables = {t for t in self._virtual_tables() if t.startswith("fts_")}

    def _virtual_tables(self) -> list[str]:
        return [
            name
            for (name,) in self._writer.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND sql LIKE 'CREATE VIRTUAL TABLE%'"
            )
        ]

    def _split_shared_fts(self) -> None:
        """Version 2 → 3: move every team's rows from the shared FTS table into its own."""
        with self._transaction() as conn:
            rows = conn.execute(
                "SELECT rowid, team, source, result_type, title, text, tags FROM chunks"
            ).fetchall()
            for rowid, team, source, result_type, title, text, tags in rows:
                table = self._ensure_fts(conn, team)
                conn.execute(
                    f"INSERT INTO {table} (rowid, scope, title, text) VALUES (?,?,?,?)",  # noqa: S608
                    (rowid, scope_tokens(source, result_type), title, _fts_body(text, tags)),
                )
            conn.execute("DROP TABLE IF EXISTS chunks_fts")

    def _has_fts(self, table: str) -> bool:
        """Whether the team's FTS table exists (another process may have created it)."""
        if table in self._fts_tables:
            return True
        found = self._reader().execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        )
        if found.fetchone() is None:
            return False
        self._fts_tables.add(table)
        return True

    def _ensure_fts(self, conn: sqlite3.Connection, team: str) -> str:
        """The team's FTS table, created inside the open write transaction if it is new."""
        table = fts_table(team)
        if table not in self._fts_tables and table not in self._created_fts:
            conn.execute(_FTS_SCHEMA.format(table=table))
            self._created_fts.add(table)
        return table

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction on the writer connection; the caller holds `_write_lock`.

        The FTS tables it created are published to readers after COMMIT, and forgotten on
        ROLLBACK (the CREATE is rolled back with the rest).
        """
        conn = self._writer
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            self._created_fts.clear()
            raise
        self._fts_tables |= self._created_fts
        self._created_fts.clear()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        # The scratch tables of BM25's postings reads (`_fts_tokens`, `_postings`) live in the
        # connection's temp schema: in memory, not a temp file held open per connection.
        conn.execute("PRAGMA temp_store=MEMORY")
        return conn

    def _reader(self) -> sqlite3.Connection:
        return self._readers.get()

    # ------------------------------------------------------------------ writes

    def index(self, chunks: Sequence[ChunkDoc], vectors: Vectors) -> None:
        """Insert `chunks`, replacing every chunk previously indexed for their entities."""
        import numpy as np

        if len(chunks) != len(vectors):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        if len(chunks) and vectors.shape[1] != self.dimensions:
            raise ValueError(f"vectors have {vectors.shape[1]} dims, index has {self.dimensions}")
        matrix = np.asarray(vectors, dtype=np.float32)
        teams = {c.team for c in chunks}
        with self._write_lock:
            with self._transaction() as conn:
                for team, entity_id in {(c.team, c.entity_id) for c in chunks}:
                    self._delete(conn, team, entity_id)
                for chunk, vector in zip(chunks, matrix, strict=True):
                    table = self._ensure_fts(conn, chunk.team)
                    cursor = conn.execute(
                        f"INSERT INTO chunks ({_COLUMNS}, vector) "  # noqa: S608
                        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                        (
                            chunk.team,
                            chunk.entity_id,
                            chunk.chunk_id,
                            chunk.chunk_index,
                            chunk.text,
                            chunk.title,
                            chunk.source,
                            chunk.result_type,
                            chunk.chunk_type,
                            chunk.uri,
                            chunk.char_offset_start,
                            chunk.char_offset_end,
                            chunk.memory_key,
                            "\x1f".join(chunk.tags),
                            chunk.expires_at,
                            vector.tobytes(),
                        ),
                    )
                    conn.execute(
                        f"INSERT INTO {table} (rowid, scope, title, text) "  # noqa: S608
                        "VALUES (?,?,?,?)",
                        (
                            cursor.lastrowid,
                            scope_tokens(chunk.source, chunk.result_type),
                            chunk.title,
                            _fts_body(chunk.text, "\x1f".join(chunk.tags)),
                        ),
                    )
            self._invalidate(teams)

    def delete_entity(self, team: str, entity_id: str) -> None:
        """Remove every chunk of one entity of `team`."""
        with self._write_lock:
            with self._transaction() as conn:
                self._delete(conn, team, entity_id)
            self._invalidate({team})

    def delete_team(self, team: str) -> int:
        """Remove every chunk of `team` and drop its FTS table (a team's erasure)."""
        with self._write_lock:
            with self._transaction() as conn:
                removed: int = conn.execute("DELETE FROM chunks WHERE team = ?", (team,)).rowcount
                table = fts_table(team)
                conn.execute(f"DROP TABLE IF EXISTS {table}")
            self._fts_tables.discard(table)
            self._created_fts.discard(table)
            self._invalidate({team})
        return removed

    def _delete(self, conn: sqlite3.Connection, team: str, entity_id: str) -> None:
        rowids = [
            r[0]
            for r in conn.execute(
                "SELECT rowid FROM chunks WHERE team = ? AND entity_id = ?", (team, entity_id)
            )
        ]
        if rowids:
            table = self._ensure_fts(conn, team)
            conn.executemany(
                f"DELETE FROM {table} WHERE rowid = ?",  # noqa: S608
                [(r,) for r in rowids],
            )
            conn.executemany("DELETE FROM chunks WHERE rowid = ?", [(r,) for r in rowids])

    def _invalidate(self, teams: set[str]) -> None:
        with self._cache_lock:
            for team in teams:
                self._vectors.pop(team, None)
                self._rows.pop(team, None)
                self._writes[team] = self._writes.get(team, 0) + 1
            self._df = {key: df for key, df in self._df.items() if key[0] not in teams}

    # ------------------------------------------------- the embedding model of the vectors

    def embedding_model(self) -> str | None:
        """The model the stored vectors come from (None: never recorded)."""
        row = (
            self._reader()
            .execute("SELECT value FROM meta WHERE key = 'embedding_model'")
            .fetchone()
        )
        return None if row is None else str(row[0])

    def record_embedding_model(self, model_id: str) -> None:
        with self._write_lock:
            self._writer.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('embedding_model', ?)",
                (model_id,),
            )

    def chunk_count(self) -> int:
        return int(self._reader().execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    def reembed(
        self,
        embed_for_team: Callable[[str], Callable[[list[str]], Vectors]],
        model_id: str,
        *,
        batch: int = 256,
        progress: Callable[[int], object] | None = None,
    ) -> int:
        """Replace every stored vector with one from another model; returns the chunks done.

        The text embedded is the one `ChunkDoc.embedding_text` gives (title, blank line,
        text), through each team's own embedder (its cache keys). BM25 rows are untouched.
        Each batch is its own transaction, and the model is recorded only at the end, so an
        interrupted switch re-embeds again (through the cache: the finished part is free).
        """
        import numpy as np

        teams = [r[0] for r in self._reader().execute("SELECT DISTINCT team FROM chunks")]
        done = 0
        for team in teams:
            embed = embed_for_team(team)
            rows = (
                self._reader()
                .execute(
                    "SELECT rowid, title, text FROM chunks WHERE team = ? ORDER BY rowid", (team,)
                )
                .fetchall()
            )
            for start in range(0, len(rows), batch):
                part = rows[start : start + batch]
                texts = [f"{title}\n\n{text}" if title else text for _, title, text in part]
                vectors = np.asarray(embed(texts), dtype=np.float32)
                if vectors.shape[1] != self.dimensions:
                    raise ValueError(
                        f"{model_id} gives {vectors.shape[1]} dims, index has {self.dimensions}"
                    )
                with self._write_lock, self._transaction() as conn:
                    conn.executemany(
                        "UPDATE chunks SET vector = ? WHERE rowid = ?",
                        [(v.tobytes(), r[0]) for v, r in zip(vectors, part, strict=True)],
                    )
                done += len(part)
                if progress is not None:
                    progress(len(part))
            self._invalidate({team})
        self.record_embedding_model(model_id)
        return done

    # ------------------------------------------------------------------ reads

    def _team_vectors(self, team: str) -> _TeamVectors:
        import numpy as np

        with self._cache_lock:
            cached = self._vectors.get(team)
            if cached is not None:
                return cached
            rows = (
                self._reader()
                .execute(
                    "SELECT rowid, entity_id, source, result_type, expires_at, vector "
                    "FROM chunks WHERE team = ? ORDER BY rowid",
                    (team,),
                )
                .fetchall()
            )
            blob = b"".join(r[5] for r in rows)
            matrix = np.frombuffer(blob, dtype=np.float32).reshape(len(rows), self.dimensions)
            rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            source_codes: dict[str, int] = {}
            type_codes: dict[str, int] = {}
            expires = np.array([np.inf if r[4] is None else r[4] for r in rows], dtype=np.float64)
            built = _TeamVectors(
                rowids=rowids,
                matrix=matrix,
                entity_ids=[r[1] for r in rows],
                source_codes=source_codes,
                sources=np.fromiter(
                    (source_codes.setdefault(r[2], len(source_codes)) for r in rows),
                    dtype=np.int32,
                    count=len(rows),
                ),
                type_codes=type_codes,
                types=np.fromiter(
                    (type_codes.setdefault(r[3], len(type_codes)) for r in rows),
                    dtype=np.int32,
                    count=len(rows),
                ),
                expires=expires,
                min_expiry=float(expires.min()) if len(rows) else float("inf"),
                position={int(rowid): i for i, rowid in enumerate(rowids)},
            )
            self._vectors[team] = built
            return built

    def _terms(self, team: str, table: str, text: str) -> tuple[list[str], dict[str, int], int]:
        """Query terms worth matching, their document frequencies, and the team's row count.

        At scale, terms in half the team's rows or more are dropped: FTS5's BM25 gives such a
        term an IDF of ~0 (log((N - n + 0.5) / (n + 0.5)) <= 0 is clamped to 1e-6), so it
        cannot change the order of documents that match another term, yet scoring its huge
        posting list dominates query time. Frequencies count rows holding the term in the
        title or text (the columns BM25 weighs); below `PRUNE_FROM_ROWS` rows none are
        counted (the map is empty). Counts are the team's own (its
        table), cached until the team's next write.
        """
        terms = query_terms(text)
        conn = self._reader()
        with self._cache_lock:
            rows = self._rows.get(team)
            writes = self._writes.get(team, 0)
        if rows is None:
            rows = int(
                conn.execute("SELECT COUNT(*) FROM chunks WHERE team = ?", (team,)).fetchone()[0]
            )
            with self._cache_lock:
                if self._writes.get(team, 0) == writes:
                    self._rows[team] = rows
        if rows < PRUNE_FROM_ROWS:
            return terms, {}, rows
        frequencies: dict[str, int] = {}
        for term in terms:
            with self._cache_lock:
                df = self._df.get((team, term))
            if df is None:
                # Counting over every column skips reading positions (1.5–2.4x cheaper than
                # `{title text} :` at 100k chunks) and gives the same count: only the scope
                # column differs, and its tokens are hashes no word can equal — except a
                # word shaped like one, which is counted the exact way.
                matched = (
                    f"{{title text}} : {_quote(term)}"
                    if _SCOPE_SHAPED.fullmatch(term)
                    else _quote(term)
                )
                df = int(
                    conn.execute(
                        f"SELECT COUNT(*) FROM {table} WHERE {table} MATCH ?",  # noqa: S608
                        (matched,),
                    ).fetchone()[0]
                )
                with self._cache_lock:
                    if self._writes.get(team, 0) == writes:
                        self._df[(team, term)] = df
            frequencies[term] = df
        kept = [term for term in terms if 2 * frequencies[term] < rows]
        return kept or terms, frequencies, rows

    def _bm25(self, query: IndexQuery, depth: int) -> list[tuple[int, str]]:
        """The best `depth` live rows of one OR query over the query's terms, by FTS5's bm25()
        (then rowid): scored in numpy from the terms' postings, or by FTS5's own statement."""
        f = query.filters
        table = fts_table(f.team)
        if not self._has_fts(table):
            return []  # the team has never indexed anything
        terms, frequencies, rows = self._terms(f.team, table, query.text)
        if not terms:
            return []
        team = self._team_vectors(f.team)
        # Words in half the team's rows or more are left only when every word is (then each
        # has bm25()'s floor IDF): their postings are most of the index, slower to read than
        # FTS5 takes to score them, so that rare kind of query keeps to FTS5's statement.
        rare = all(2 * frequencies.get(t, 0) < rows for t in terms)
        found = self._bm25_scored(team, table, terms, f, depth) if SCORE_POSTINGS and rare else None
        if found is None:
            # Expired rows are filtered below, so fetch that many more to still fill `depth`.
            expired = int((team.expires <= f.now).sum()) if team.min_expiry <= f.now else 0
            found = self._bm25_rows(
                table, " OR ".join(_quote(t) for t in terms), scope_match(f), depth + expired
            )
        ranked: list[tuple[int, str]] = []
        for _, rowid in found:
            # The team's own row set is the security boundary: a row outside it never passes.
            i = team.position.get(rowid)
            if i is None or not team.expires[i] > f.now:
                continue
            ranked.append((rowid, team.entity_ids[i]))
        return ranked[:depth]

    def _bm25_rows(
        self, table: str, expression: str, scope: str, limit: int
    ) -> list[tuple[float, int]]:
        """(bm25, rowid) of the best `limit` rows matching `expression` in title or text.

        Ordered as FTS5 orders them: bm25() ascending (it is the negated score), then rowid.
        """
        weights = (0.0, self.config.title_weight, self.config.text_weight)
        rows = (
            self._reader()
            .execute(
                f"SELECT bm25({table}, ?, ?, ?), rowid FROM {table} "  # noqa: S608
                f"WHERE {table} MATCH ? ORDER BY 1, rowid LIMIT ?",
                (*weights, f"{{title text}} : ({expression}){scope}", limit),
            )
            .fetchall()
        )
        return [(float(score), int(rowid)) for score, rowid in rows]

    def _bm25_scored(
        self,
        team: _TeamVectors,
        table: str,
        terms: list[str],
        filters: SearchFilters,
        depth: int,
    ) -> list[tuple[float, int]] | None:
        """What `_bm25_rows` gives for `"t1" OR "t2" …` and the filters (its live rows),
        scored in numpy: (bm25, rowid), bm25() ascending, then rowid.

        FTS5 calls bm25() on every row the OR query matches (~4 µs a row) and counts each
        phrase's rows again for its IDF in every statement. Here each term's postings (read
        once from FTS5's index, then cached until the team's next write) are scored with
        bm25()'s own arithmetic, in its order (phrase by phrase, in double precision, with
        the same libm log): the scores are FTS5's to the bit, so the order, ties broken by
        rowid, is too. The scope phrases add nothing to bm25() (their column weighs 0) and
        the filters' rows are the team's own masks. None: a term FTS5 would read as a
        phrase of several tokens (or none), or shadow tables that do not add up: the caller
        asks FTS5 itself.
        """
        import numpy as np

        if depth <= 0 or len(team.rowids) == 0:
            return []  # nothing to rank (a team whose rows were all deleted)
        stats = self._team_terms(team, table)
        tokens = self._fts_tokens(terms)
        if stats is None or tokens is None:
            return None
        scores = np.zeros(len(team.rowids), dtype=np.float64)
        matched = np.zeros(len(team.rowids), dtype=np.bool_)
        k1_plus_1 = _BM25_K1 + 1.0
        for token in tokens:
            postings = self._postings(stats, team, table, token)
            if postings is None:
                return None
            # In double, as bm25() computes (a float32 operand would round every step).
            at, frequency = postings.positions, postings.frequencies.astype(np.float64)
            idf = _bm25_idf(stats.rows, len(at))
            scores[at] += idf * ((frequency * k1_plus_1) / (frequency + stats.length_norms[at]))
            matched[at] = True
        live = team.live(filters)
        if live is not None:
            matched &= live
        found = np.flatnonzero(matched)
        if len(found) > depth:
            # The depth-th best score, and every row tying it (rowid decides among them).
            cut = np.partition(-scores[found], depth - 1)[depth - 1]
            found = found[-scores[found] <= cut]
        best = found[np.lexsort((team.rowids[found], -scores[found]))][:depth]
        return [(-float(scores[i]), int(team.rowids[i])) for i in best]

    def _team_terms(self, team: _TeamVectors, table: str) -> _TeamTerms | None:
        """The team's BM25 statistics (read once per team generation), None if unusable."""
        import numpy as np

        with self._cache_lock:
            if team.terms is not None or team.terms_unusable:
                return team.terms
            conn = self._reader()
            try:
                sizes = conn.execute(
                    f"SELECT id, sz FROM {table}_docsize ORDER BY id"  # noqa: S608
                ).fetchall()
                totals = conn.execute(
                    f"SELECT block FROM {table}_data WHERE id = 1"  # noqa: S608
                ).fetchone()
            except sqlite3.OperationalError:
                return None  # the table was dropped meanwhile (the team erased): not cached
            ids = np.fromiter((r[0] for r in sizes), dtype=np.int64, count=len(sizes))
            # Three columns (scope, title, text): a row's D is the sum of its three sizes.
            per_row = _varints(b"".join(r[1] for r in sizes))
            averages = _varints(bytes(totals[0])) if totals is not None else None
            if (
                averages is None
                or len(averages) != 4
                or len(per_row) != 3 * len(ids)
                or int(averages[0]) != len(ids)
                or int(averages[1:].sum()) != int(per_row.sum())
                or len(ids) != len(team.rowids)
                or not np.array_equal(team.rowids, ids)
            ):
                # Not what FTS5 writes for this table, or rows that changed between the reads:
                # FTS5's own statement stays right whatever its storage looks like.
                team.terms_unusable = True
                return None
            lengths = per_row.reshape(len(ids), 3).sum(axis=1).astype(np.float64)
            rows = int(averages[0])
            # bm25()'s avgdl and each row's k1·(1 - b + b·D/avgdl), as fts5_aux.c computes them.
            avgdl = float(int(averages[1:].sum())) / float(rows)
            norms = _BM25_K1 * ((1 - _BM25_B) + _BM25_B * lengths / avgdl)
            team.terms = _TeamTerms(
                rows=rows,
                length_norms=norms,
                budget=max(_MIN_POSTINGS, _POSTINGS_PER_ROW * rows),
            )
            return team.terms

    def _fts_tokens(self, terms: list[str]) -> list[str] | None:
        """The FTS5 token each query term is matched as, through the tables' own tokenizer
        (a scratch FTS5 table in the connection's temp schema); None if a term is not one
        token (FTS5 would match it as a phrase)."""
        with self._cache_lock:
            known = {t: self._token_of[t] for t in terms if t in self._token_of}
        unknown = [t for t in terms if t not in known]
        if unknown:
            conn = self._reader()
            conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.cairn_words "
                f"USING fts5 (word, tokenize = '{_TOKENIZE}')"
            )
            conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.cairn_words_vocabulary "
                "USING fts5vocab(temp, cairn_words, 'instance')"
            )
            try:
                conn.executemany(
                    "INSERT INTO temp.cairn_words (rowid, word) VALUES (?, ?)",
                    list(enumerate(unknown)),
                )
                found: dict[int, list[str]] = {}
                for doc, term in conn.execute("SELECT doc, term FROM temp.cairn_words_vocabulary"):
                    found.setdefault(int(doc), []).append(str(term))
            finally:
                conn.execute("DELETE FROM temp.cairn_words")
            for i, term in enumerate(unknown):
                pieces = found.get(i, [])
                known[term] = pieces[0] if len(pieces) == 1 else None
            with self._cache_lock:
                if len(self._token_of) > _TOKEN_MEMO:
                    self._token_of.clear()
                self._token_of.update((t, known[t]) for t in unknown)
        tokens = [known[t] for t in terms]
        return None if None in tokens else [t for t in tokens if t is not None]

    def _postings(
        self, stats: _TeamTerms, team: _TeamVectors, table: str, token: str
    ) -> _Postings | None:
        """The rows of the team holding `token` in title or text (cached per team generation);
        None if they cannot be read exactly (the table dropped meanwhile, a token shaped like
        a scope token)."""
        import numpy as np

        with self._cache_lock:
            cached = stats.postings.get(token)
            if cached is not None:
                stats.postings.move_to_end(token)
                return cached
        if _SCOPE_SHAPED.fullmatch(token):
            return None  # it could be in the scope column, which the read below does not skip
        conn = self._reader()
        vocabulary = f"temp.{table}_instances"
        try:
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {vocabulary} "
                f"USING fts5vocab(main, {table}, 'instance')"
            )
            # Every instance of the token, in one string: its row, doubled, plus one in the
            # title (the vocabulary lists them by row, then column and offset: FTS5's order).
            # One number per instance is the cheapest read (a second column costs half again).
            (packed,) = conn.execute(
                f"SELECT group_concat(doc * 2 + (col = 'title')) FROM {vocabulary} "  # noqa: S608
                "WHERE term = ?",
                (token,),
            ).fetchone()
        except sqlite3.OperationalError:
            return None
        if not packed:
            postings = _Postings(np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32))
            with self._cache_lock:
                stats.postings[token] = postings
            return postings
        instances = np.fromstring(packed, dtype=np.int64, sep=",")
        rowids = instances >> 1
        if len(rowids) > 1 and bool((rowids[1:] < rowids[:-1]).any()):
            return None  # not in row order, unlike every FTS5 so far: count it the slow way
        starts = np.flatnonzero(np.concatenate(([True], rowids[1:] != rowids[:-1])))
        in_title = np.add.reduceat(instances & 1, starts)
        in_text = np.diff(np.append(starts, len(rowids))) - in_title
        rowids = rowids[starts]
        at = team.row_positions(rowids)
        # The team's own row set is the security boundary: a row outside it never passes.
        inside = at >= 0
        frequencies = _weighted_count(
            in_title[inside], in_text[inside], self.config.title_weight, self.config.text_weight
        )
        small = frequencies.astype(np.float32)
        postings = _Postings(
            at[inside].astype(np.int32),
            small if np.array_equal(small, frequencies) else frequencies,
        )
        with self._cache_lock:
            if token not in stats.postings:
                stats.postings[token] = postings
                stats.held += len(postings.positions)
                while stats.held > stats.budget and len(stats.postings) > 1:
                    _, dropped = stats.postings.popitem(last=False)
                    stats.held -= len(dropped.positions)
        return postings

    def _vector(self, query: IndexQuery, depth: int) -> list[tuple[int, str, float]]:
        import numpy as np

        vector = query_vector(query)
        if vector is None:
            return []
        team = self._team_vectors(query.filters.team)
        if len(team.rowids) == 0:
            return []
        q = np.asarray(vector, dtype=np.float32)
        # einsum's own SIMD loop rather than BLAS sgemv: single-threaded whatever the BLAS
        # thread setting, and faster here (100k × 384: 7.2 ms CPU against 12.9 ms for one
        # OpenBLAS thread; the default thread count on 2 busy cores took 29 ms at 10k chunks).
        scores = np.einsum("ij,j->i", team.matrix, q)
        mask = team.live(query.filters)
        if mask is not None:
            scores[~mask] = -np.inf
        live = len(scores) if mask is None else int(mask.sum())
        take = min(depth, live)
        if take == 0:
            return []
        n = len(scores)
        top = np.argpartition(scores, n - take)[n - take :] if take < n else np.arange(n)
        # Order by score, then rowid for a deterministic order among equal scores.
        top = top[np.lexsort((team.rowids[top], -scores[top]))]
        top = top[np.isfinite(scores[top])]
        return [(int(team.rowids[i]), team.entity_ids[i], float(scores[i])) for i in top]

    def query(self, query: IndexQuery) -> IndexPage:
        """A page of entities: BM25 and/or vector rankings, RRF-fused, scored by calibrated
        relevance, cut where there is no evidence (hybrid), grouped by entity."""
        fusion = self.config.fusion
        bm25_weight, _ = fusion.weights(query.mode)
        # Cosines are needed for the relevance score in every mode, so the vector ranking is
        # computed whenever there is a query vector (a bm25-only query weighs it 0). Beside
        # BM25 it runs on another thread, where it also waits for the query's embedding if
        # that is still computing: FTS5, numpy and the model all release the GIL.
        vector_leg = None
        if bm25_weight > 0 and query.vector is not None:
            vector_leg = _QUERY_LEGS.get().submit(self._vector, query, fusion.depth)
            bm25 = self._bm25(query, fusion.depth)
        else:
            bm25 = self._bm25(query, fusion.depth) if bm25_weight > 0 else []
        stems = query_stems(query.text)
        # Rows are read once, whole: their words give the coverage (computed only where
        # fusion asks for it) and they make the page. A hybrid query asks the coverage of BM25
        # rows for the cut-off, roughly in BM25 order and only as far as the page needs, so a
        # row is read with the next BM25 rows not read yet, `_READ_AHEAD` in one statement;
        # the single modes need it only for the page's scores, read once the page is known.
        bm25_rows = [rowid for rowid, _ in bm25]
        bm25_rank = {rowid: i for i, rowid in enumerate(bm25_rows)}
        records: dict[int, tuple[Any, ...]] = {}
        read: set[int] = set()
        covered: dict[int, float] = {}

        def read_rows(rowids: list[int]) -> None:
            wanted = [rowid for rowid in dict.fromkeys(rowids) if rowid not in read]
            read.update(wanted)
            records.update(self._records(wanted))

        def coverage_of(rowid: int) -> float:
            if rowid in covered:
                return covered[rowid]
            if rowid not in read:
                after = bm25_rank.get(rowid, len(bm25_rows)) + 1
                read_rows([rowid, *bm25_rows[after : after + _READ_AHEAD - 1]])
            record = records.get(rowid)
            found = 0.0
            if record is not None:
                tags = record[_TAGS].replace("\x1f", " ")
                found = coverage(stems, record[_TITLE], record[_TEXT], tags)
            covered[rowid] = found
            return found

        if vector_leg is not None:
            if not vector_leg.done():
                # The query's embedding is usually still computing: the first BM25 rows'
                # evidence (what the cut-off and the page ask first) is worked out meanwhile.
                for rowid in bm25_rows[:_READ_AHEAD]:
                    coverage_of(rowid)
            vector = vector_leg.result()
        else:
            vector = self._vector(query, fusion.depth)
        entity_of = {rowid: entity for rowid, entity in bm25}
        entity_of.update((rowid, entity) for rowid, entity, _ in vector)

        page, has_more = fuse_page(
            [rowid for rowid, _ in bm25],
            [(rowid, cosine) for rowid, _, cosine in vector],
            coverage_of,
            query.mode,
            fusion,
            entity_of.__getitem__,
            query.offset,
            query.limit,
            query.chunks_per_entity,
            tie_key=lambda rowid: f"{rowid:020d}",
            before_scoring=read_rows,
        )
        wanted = [rowid for _, hits in page for rowid, _ in hits]
        docs = {rowid: _doc(records[rowid]) for rowid in wanted if rowid in records}
        # A row ranked above may be gone by now: a writer deleted (retracted, re-indexed) it
        # between the ranking and this read. It is skipped, and an entity left with no row is
        # left out: the answer is what the index holds when it is read, never an error.
        groups = []
        for entity_id, hits in page:
            kept = [ChunkHit(docs[rowid], score) for rowid, score in hits if rowid in docs]
            if kept:
                groups.append(EntityHits(entity_id, kept))
        return IndexPage(groups=groups, has_more=has_more)

    def _records(self, rowids: list[int]) -> dict[int, tuple[Any, ...]]:
        """The `_COLUMNS` of each row in `rowids` still indexed (a deleted one is absent)."""
        return {int(r[0]): tuple(r[1:]) for r in self._chunk_rows(rowids, _COLUMNS)}

    def _chunk_rows(self, rowids: list[int], columns: str) -> list[Any]:
        """The rowid and `columns` of each chunk row in `rowids` (none asked: no query)."""
        if not rowids:
            return []
        marks = ",".join("?" * len(rowids))
        return (
            self._reader()
            .execute(
                f"SELECT rowid, {columns} FROM chunks WHERE rowid IN ({marks})",  # noqa: S608
                rowids,
            )
            .fetchall()
        )

    def entity_chunks(self, team: str, entity_id: str, now: float) -> list[ChunkDoc]:
        """The live chunks of one entity of `team`, in chunk order."""
        rows = (
            self._reader()
            .execute(
                f"SELECT {_COLUMNS} FROM chunks WHERE team = ? AND entity_id = ? "  # noqa: S608
                "AND (expires_at IS NULL OR expires_at > ?) ORDER BY chunk_index",
                (team, entity_id, now),
            )
            .fetchall()
        )
        return [_doc(r) for r in rows]

    def entity_ids(self, team: str, source: str | None = None) -> set[str]:
        """Document entities (not memories) indexed for `team` (and `source`)."""
        sql = "SELECT DISTINCT entity_id FROM chunks WHERE team = ? AND result_type = 'entity'"
        params: list[Any] = [team]
        if source is not None:
            sql += " AND source = ?"
            params.append(source)
        return {r[0] for r in self._reader().execute(sql, params)}

    def count(self, team: str) -> int:
        """Chunks indexed for `team` (memories included)."""
        row = (
            self._reader().execute("SELECT COUNT(*) FROM chunks WHERE team = ?", (team,)).fetchone()
        )
        return int(row[0])


def _fts_body(text: str, tags: str) -> str:
    """The FTS text column: memory tags are searchable words too (documents carry theirs)."""
    return text if not tags else text + "\n" + " ".join(t for t in tags.split("\x1f") if t)


def _doc(row: Sequence[Any]) -> ChunkDoc:
    (
        team,
        entity_id,
        chunk_id,
        chunk_index,
        text,
        title,
        source,
        result_type,
        chunk_type,
        uri,
        start,
        end,
        memory_key,
        tags,
        expires_at,
    ) = row
    return ChunkDoc(
        team=team,
        entity_id=entity_id,
        chunk_id=chunk_id,
        chunk_index=chunk_index,
        text=text,
        title=title,
        source=source,
        result_type=result_type,
        chunk_type=chunk_type,
        uri=uri,
        char_offset_start=start,
        char_offset_end=end,
        memory_key=memory_key,
        tags=tuple(t for t in tags.split("\x1f") if t),
        expires_at=expires_at,
    )
