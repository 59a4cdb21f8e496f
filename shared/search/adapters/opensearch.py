"""The AWS search index: OpenSearch (Serverless `aoss` or managed `es`) over SigV4.

A chunk is one document: keyword fields for the filters (team, source, result_type, entity),
`title` and `text` analysed with the `english` analyzer (stopwords + Porter stemming, like the
embedded index), and a `knn_vector` (HNSW, cosine, Faiss engine: what Serverless vector
collections accept, with efficient filtering inside the k-NN search on both services).

Each team has its own index (`<index_name>-<hash of the team>`, created with the mapping on
the team's first write): BM25's statistics (document count, average field length, document
frequencies) are per index in Lucene, so a shared index would let one team's documents move
another team's scores and reveal which words they contain. Every query still filters on the
team as well.

One round trip per query: an `_msearch` carrying a BM25 `multi_match` and a filtered `knn`
query; the two rankings are fused client-side with the same RRF, relevance, cut-off and
grouping code as the embedded index (see docs/search.md for why not a server-side hybrid
search pipeline).

Serverless vector collections do not accept caller-chosen document ids, so replacing an
entity's chunks is "find their ids, bulk-delete them, bulk-index the new ones" there; on a
managed domain chunks carry deterministic ids as well. Lookups that can return many documents
(chunk ids, an entity's chunks, entity ids) page by `search_after` or `after_key`, `page_size`
at a time: a search returns at most `max_result_window` (10,000) hits, and silently stopping
there would leave stale chunks behind.

The mapping reaches OpenSearch twice: the stack creates an index template for
`<index_name>-*` at deploy (`index_template_body`, infra/search.py), so a team's index gets
the k-NN mapping however it is created; and `ensure_index` still creates each team's index
with the same body on its first write. Two cold starts racing to create it are both fine
(`resource_already_exists_exception`), and a 403 while a just-deployed access policy
propagates is retried with a bounded backoff.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from shared.search.errors import IndexUnavailable
from shared.search.fusion import FusionConfig, coverage, fuse, group_by_entity, query_stems
from shared.search.models import (
    ChunkDoc,
    ChunkHit,
    EntityHits,
    IndexPage,
    IndexQuery,
    SearchFilters,
    query_vector,
)

if TYPE_CHECKING:
    from shared.search.ports import Vectors

_SOURCE_EXCLUDES = {"excludes": ["vector"]}
# OpenSearch's default `index.max_result_window`: the most hits one search returns.
MAX_PAGE = 10_000
# Faiss HNSW: accepted by Serverless vector collections and managed domains alike, and it
# filters inside the graph search (efficient k-NN filtering) on both.
VECTOR_ENGINE: Final = "faiss"
# What a Serverless vector collection accepts in a knn_vector method (its documented limits:
# the native engines, these space types); anything else fails at deploy, not at first write.
SERVERLESS_ENGINES: Final = frozenset({"faiss", "nmslib"})
SERVERLESS_SPACE_TYPES: Final = frozenset({"l2", "innerproduct", "cosinesimil"})
# Serverless manages shards, replicas and refresh itself: an index body may set k-NN only.
SERVERLESS_SETTINGS: Final = frozenset({"index.knn"})
# Bedrock Titan Text Embeddings v2 output sizes (1,024 by default).
TITAN_V2_DIMENSIONS: Final = (256, 512, 1024)
# Waits between attempts when a just-deployed access policy still answers 403 (IAM and
# OpenSearch policies take seconds to reach every node): 7.5 s in all, inside a group's 24 s.
PROPAGATION_DELAYS: Final = (0.5, 1.0, 2.0, 4.0)


def signed_client(endpoint: str, region: str, service: str = "aoss") -> Any:
    """An `OpenSearch` client signing with the Lambda role's credentials (SigV4)."""
    import boto3
    from opensearchpy import AWSV4SignerAuth, OpenSearch, RequestsHttpConnection

    host = endpoint.removeprefix("https://").rstrip("/")
    credentials = boto3.Session().get_credentials()
    return OpenSearch(
        hosts=[{"host": host, "port": 443}],
        http_auth=AWSV4SignerAuth(credentials, region, service),
        use_ssl=True,
        verify_certs=True,
        connection_class=RequestsHttpConnection,
        pool_maxsize=10,
        timeout=10,
    )


def team_index(prefix: str, team: str) -> str:
    """The name of `team`'s index: `prefix` + 24 hex characters of the team's hash.

    Hashing keeps any team name a valid (lower-case, no punctuation) index name.

    >>> team_index("cairn-chunks", "alpha")
    'cairn-chunks-8ed3f6ad685b959ead7022518e1af76c'
    """
    return f"{prefix}-{hashlib.sha256(team.encode()).hexdigest()[:32]}"


def index_body(dimensions: int) -> dict[str, Any]:
    """Settings and mappings of the chunk index."""
    keyword = {"type": "keyword"}
    return {
        "settings": {"index": {"knn": True}},
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "team": keyword,
                "entity_id": keyword,
                "chunk_id": keyword,
                "chunk_index": {"type": "integer"},
                "chunk_type": keyword,
                "result_type": keyword,
                "source": keyword,
                "uri": {"type": "keyword", "index": False},
                "memory_key": keyword,
                "tags": {"type": "text", "analyzer": "english"},
                "title": {"type": "text", "analyzer": "english"},
                "text": {"type": "text", "analyzer": "english"},
                "char_offset_start": {"type": "integer", "index": False},
                "char_offset_end": {"type": "integer", "index": False},
                "expires_at": {"type": "double"},
                "vector": {
                    "type": "knn_vector",
                    "dimension": dimensions,
                    "method": {
                        "name": "hnsw",
                        "space_type": "cosinesimil",
                        "engine": VECTOR_ENGINE,
                        "parameters": {"m": 16, "ef_construction": 256},
                    },
                },
            },
        },
    }


def index_template_name(prefix: str) -> str:
    """The name of the composable index template covering every team index of `prefix`."""
    return f"{prefix}-template"


def index_template_body(
    prefix: str, dimensions: int, *, serverless: bool, replicas: int = 0
) -> dict[str, Any]:
    """The composable index template (`PUT _index_template/<name>`) giving every
    `<prefix>-*` index the chunk mapping, created by the stack at deploy.

    On a managed domain the template also pins one shard and `replicas` replicas (a one-node
    dev domain cannot place a replica, which would leave every index yellow); on Serverless,
    which manages shards itself, it carries nothing but the k-NN setting.

    >>> index_template_body("cairn-chunks", 1024, serverless=True)["index_patterns"]
    ['cairn-chunks-*']
    """
    template = index_body(dimensions)
    if not serverless:
        template["settings"]["index"].update(
            {"number_of_shards": 1, "number_of_replicas": replicas}
        )
    return {
        "index_patterns": [f"{prefix}-*"],
        # Above OpenSearch's built-in templates, so ours decides the mapping of our indexes.
        "priority": 100,
        "template": template,
        "_meta": {"owner": "cairn", "dimensions": dimensions},
    }


def _flat_settings(settings: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flat_settings(value, f"{name}."))
        else:
            flat[name if name.startswith("index.") else f"index.{name}"] = value
    return flat


def serverless_violations(body: dict[str, Any], dimensions: int) -> list[str]:
    """What a Serverless vector collection would refuse in an index (or template) body.

    The documented constraints: index settings other than `index.knn` (shards, replicas,
    `refresh_interval`, ...) are managed by Serverless; a `knn_vector` needs a native engine
    (faiss or nmslib), a supported space type and the embedding model's dimension. An empty
    list means the body passes.

    >>> serverless_violations(index_body(1024), 1024)
    []
    """
    problems: list[str] = []
    if "index_patterns" in body:
        if not body["index_patterns"]:
            problems.append("an index template needs index_patterns")
        body = body.get("template", {})
    settings = _flat_settings(body.get("settings", {}))
    for name in sorted(set(settings) - SERVERLESS_SETTINGS):
        problems.append(f"setting `{name}` is not supported on OpenSearch Serverless")
    if settings.get("index.knn") is not True:
        problems.append("setting `index.knn` must be true for k-NN fields")
    vectors = {
        name: field
        for name, field in body.get("mappings", {}).get("properties", {}).items()
        if field.get("type") == "knn_vector"
    }
    if not vectors:
        problems.append("the mapping has no knn_vector field")
    for name, field in sorted(vectors.items()):
        method = field.get("method", {})
        if method.get("engine") not in SERVERLESS_ENGINES:
            problems.append(
                f"`{name}`: engine {method.get('engine')!r} is not one of "
                f"{sorted(SERVERLESS_ENGINES)}"
            )
        if method.get("space_type") not in SERVERLESS_SPACE_TYPES:
            problems.append(f"`{name}`: space_type {method.get('space_type')!r} is not supported")
        if method.get("name") != "hnsw":
            problems.append(f"`{name}`: method {method.get('name')!r} is not hnsw")
        if field.get("dimension") != dimensions:
            problems.append(
                f"`{name}`: dimension {field.get('dimension')} does not match the embedding "
                f"model's {dimensions}"
            )
    return problems


def filter_clauses(filters: SearchFilters) -> list[dict[str, Any]]:
    """Team always; source and result types when narrowed; expired memories never."""
    clauses: list[dict[str, Any]] = [
        {"term": {"team": filters.team}},
        {"terms": {"result_type": sorted(filters.types)}},
        {
            "bool": {
                "should": [
                    {"bool": {"must_not": {"exists": {"field": "expires_at"}}}},
                    {"range": {"expires_at": {"gt": filters.now}}},
                ],
                "minimum_should_match": 1,
            }
        },
    ]
    if filters.source is not None:
        clauses.insert(1, {"term": {"source": filters.source}})
    return clauses


class OpenSearchIndex:
    """`SearchIndex` on an OpenSearch index (client injected: tests pass a recorded transport
    or `FakeOpenSearch`). `page_size` is how many hits or buckets one lookup search returns."""

    def __init__(
        self,
        client: Any,
        index_name: str,
        dimensions: int,
        *,
        serverless: bool = True,
        fusion: FusionConfig | None = None,
        title_boost: float = 3.0,
        page_size: int = MAX_PAGE,
        propagation_delays: Sequence[float] = PROPAGATION_DELAYS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not 0 < page_size <= MAX_PAGE:
            raise ValueError(f"page_size must be between 1 and {MAX_PAGE} (got {page_size})")
        self._client = client
        self._prefix = index_name
        # Team indexes this process knows exist (created or seen): one HEAD per team at most.
        self._known: set[str] = set()
        self._dimensions = dimensions
        self._serverless = serverless
        # Remote candidates are paid for in payload: a smaller default depth than embedded.
        self._fusion = fusion or FusionConfig(depth=100)
        self._title_boost = title_boost
        self._page_size = page_size
        self._propagation_delays = tuple(propagation_delays)
        self._sleep = sleep

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        from opensearchpy.exceptions import OpenSearchException

        try:
            return getattr(self._client, method)(*args, **kwargs)
        except OpenSearchException as error:
            raise IndexUnavailable(f"search index request failed: {error}") from error

    def index_name(self, team: str) -> str:
        """The index holding `team`'s chunks."""
        return team_index(self._prefix, team)

    def ensure_index(self, team: str) -> bool:
        """Create `team`'s index with its mapping unless it exists; True when created.

        Another container creating it first (`resource_already_exists_exception`) counts as
        existing. A 403 is retried after each of `propagation_delays`: right after a deploy
        the data access policy (Serverless) or domain policy may not have reached every node
        yet. A 403 that outlasts the backoff is an `IndexUnavailable` naming the policy.
        """
        from opensearchpy.exceptions import (
            AuthorizationException,
            OpenSearchException,
            RequestError,
        )

        name = self.index_name(team)
        if name in self._known:
            return False
        delays = iter(self._propagation_delays)
        while True:
            try:
                created = self._create_if_missing(name)
            except AuthorizationException as error:
                delay = next(delays, None)
                if delay is None:
                    raise IndexUnavailable(
                        f"search index {name}: access denied ({error.status_code}) after "
                        f"{len(self._propagation_delays)} retries; check that this function's "
                        "role is in the search access policy"
                    ) from error
                self._sleep(delay)
                continue
            except RequestError as error:
                if error.error != "resource_already_exists_exception":
                    raise IndexUnavailable(f"could not create search index: {error}") from error
                created = False  # another writer created it first
            except OpenSearchException as error:
                raise IndexUnavailable(f"could not create search index: {error}") from error
            self._known.add(name)
            return created

    def delete_team(self, team: str) -> int:
        """Delete `team`'s index (each team has its own); how many chunks it held."""
        name = self.index_name(team)
        self._known.discard(name)
        if not self._client.indices.exists(index=name):
            return 0
        held = int(self._client.count(index=name).get("count", 0))
        self._client.indices.delete(index=name)
        return held

    def _create_if_missing(self, name: str) -> bool:
        if self._client.indices.exists(index=name):
            return False
        self._client.indices.create(index=name, body=index_body(self._dimensions))
        return True

    def _search_team(self, team: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """One search of `team`'s index; None when the team has no index yet."""
        from opensearchpy.exceptions import NotFoundError, OpenSearchException

        try:
            result: dict[str, Any] = self._client.search(index=self.index_name(team), body=body)
        except NotFoundError:
            return None
        except OpenSearchException as error:
            raise IndexUnavailable(f"search index request failed: {error}") from error
        return result

    # ------------------------------------------------------------------ writes

    def _doc_id(self, chunk: ChunkDoc) -> str:
        return hashlib.sha256(f"{chunk.team}\x00{chunk.chunk_id}".encode()).hexdigest()[:40]

    def _all_hits(
        self, team: str, body: dict[str, Any], sort: list[dict[str, str]]
    ) -> list[dict[str, Any]]:
        """Every hit of `body`'s query in `sort` order, `page_size` per search (`search_after`)."""
        hits: list[dict[str, Any]] = []
        after: list[Any] | None = None
        while True:
            page_body = {**body, "size": self._page_size, "sort": sort}
            if after is not None:
                page_body["search_after"] = after
            response = self._search_team(team, page_body)
            if response is None:
                return hits
            page = response["hits"]["hits"]
            hits += page
            if len(page) < self._page_size:
                return hits
            after = page[-1]["sort"]

    def _ids_of(self, team: str, entity_ids: Sequence[str]) -> list[str]:
        body = {
            "_source": False,
            "query": {
                "bool": {
                    "filter": [
                        {"term": {"team": team}},
                        {"terms": {"entity_id": sorted(entity_ids)}},
                    ]
                }
            },
        }
        # (entity, index) repeats only for a duplicate left by Serverless's refresh window.
        sort = [{"entity_id": "asc"}, {"chunk_index": "asc"}]
        return [hit["_id"] for hit in self._all_hits(team, body, sort)]

    def index(self, chunks: Sequence[ChunkDoc], vectors: Vectors) -> None:
        """Replace the chunks of every entity in `chunks` with `chunks` (one bulk request)."""
        if len(chunks) != len(vectors):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        by_team: dict[str, set[str]] = {}
        for chunk in chunks:
            by_team.setdefault(chunk.team, set()).add(chunk.entity_id)
        actions: list[dict[str, Any]] = []
        keep = {self._doc_id(c) for c in chunks} if not self._serverless else set()
        for team, entity_ids in sorted(by_team.items()):
            self.ensure_index(team)
            name = self.index_name(team)
            for doc_id in self._ids_of(team, sorted(entity_ids)):
                if doc_id not in keep:
                    actions.append({"delete": {"_index": name, "_id": doc_id}})
        for chunk, vector in zip(chunks, vectors, strict=True):
            header: dict[str, Any] = {"_index": self.index_name(chunk.team)}
            if not self._serverless:
                header["_id"] = self._doc_id(chunk)
            actions.append({"index": header})
            actions.append(_source(chunk, [float(x) for x in vector]))
        self._bulk(actions)

    def delete_entity(self, team: str, entity_id: str) -> None:
        """Remove every chunk of one entity of `team`."""
        ids = self._ids_of(team, [entity_id])
        if ids:
            name = self.index_name(team)
            self._bulk([{"delete": {"_index": name, "_id": i}} for i in ids])

    def _bulk(self, actions: list[dict[str, Any]]) -> None:
        if not actions:
            return
        response = self._call("bulk", body=actions)
        if response.get("errors"):
            failed = [
                item
                for item in response.get("items", [])
                for op in item.values()
                if op.get("status", 200) >= 300 and op.get("status") != 404
            ]
            if failed:
                raise IndexUnavailable(f"search index rejected {len(failed)} bulk operations")

    # ------------------------------------------------------------------ reads

    def search_bodies(self, query: IndexQuery) -> list[dict[str, Any]]:
        """The `_msearch` lines of a query: header, BM25 body, header, k-NN body (per mode)."""
        depth = self._fusion.depth
        bm25_weight, _ = self._fusion.weights(query.mode)
        filters = filter_clauses(query.filters)
        name = self.index_name(query.filters.team)
        lines: list[dict[str, Any]] = []
        if bm25_weight > 0:
            lines += [
                {"index": name},
                {
                    "size": depth,
                    "_source": _SOURCE_EXCLUDES,
                    "query": {
                        "bool": {
                            "must": [
                                {
                                    "multi_match": {
                                        "query": query.text,
                                        "fields": [f"title^{self._title_boost:g}", "text", "tags"],
                                        "type": "most_fields",
                                    }
                                }
                            ],
                            "filter": filters,
                        }
                    },
                },
            ]
        # The k-NN search runs whenever there is a query vector: its cosines feed every hit's
        # relevance score, even when a bm25-only query gives the ranking no weight.
        vector = query_vector(query)
        if vector is not None:
            lines += [
                {"index": name},
                {
                    "size": depth,
                    "_source": _SOURCE_EXCLUDES,
                    "query": {
                        "knn": {
                            "vector": {
                                "vector": list(vector),
                                "k": depth,
                                "filter": {"bool": {"filter": filters}},
                            }
                        }
                    },
                },
            ]
        return lines

    def query(self, query: IndexQuery) -> IndexPage:
        """One `_msearch` round trip, then RRF fusion and entity grouping client-side."""
        lines = self.search_bodies(query)
        if not lines:
            return IndexPage(groups=[], has_more=False)
        response = self._call("msearch", body=lines, index=self.index_name(query.filters.team))
        bm25_weight, _ = self._fusion.weights(query.mode)
        kinds = ["bm25"] if bm25_weight > 0 else []
        if query.vector is not None:
            kinds.append("vector")
        bm25: list[str] = []
        vector: list[tuple[str, float]] = []
        docs: dict[str, ChunkDoc] = {}
        for answer, kind in zip(response["responses"], kinds, strict=True):
            if "error" in answer:
                if answer.get("status") == 404:
                    continue  # the team has no index yet: nothing indexed, nothing found
                raise IndexUnavailable(f"search index query failed: {answer['error']}")
            for hit in answer["hits"]["hits"]:
                doc = _doc(hit["_source"])
                if doc.team != query.filters.team:
                    continue  # defence in depth: the filter already guarantees this
                docs[doc.chunk_id] = doc
                if kind == "bm25":
                    bm25.append(doc.chunk_id)
                else:
                    # cosinesimil scores (1 + cos) / 2: back to the cosine.
                    vector.append((doc.chunk_id, 2.0 * float(hit["_score"]) - 1.0))
        stems = query_stems(query.text)
        coverage_of = {
            chunk_id: coverage(
                stems, docs[chunk_id].title, docs[chunk_id].text, " ".join(docs[chunk_id].tags)
            )
            for chunk_id in bm25
        }
        fused = fuse(bm25, vector, coverage_of, query.mode, self._fusion)
        page, has_more = group_by_entity(
            fused,
            lambda chunk_id: docs[chunk_id].entity_id,
            query.offset,
            query.limit,
            query.chunks_per_entity,
        )
        groups = [
            EntityHits(entity_id, [ChunkHit(docs[c], score) for c, score in hits])
            for entity_id, hits in page
        ]
        return IndexPage(groups=groups, has_more=has_more)

    def entity_chunks(self, team: str, entity_id: str, now: float) -> list[ChunkDoc]:
        """The live chunks of one entity, in chunk order."""
        body = {
            "_source": _SOURCE_EXCLUDES,
            "query": {
                "bool": {
                    "filter": [
                        *filter_clauses(SearchFilters(team=team, now=now)),
                        {"term": {"entity_id": entity_id}},
                    ]
                }
            },
        }
        hits = self._all_hits(team, body, [{"chunk_index": "asc"}])
        return [_doc(hit["_source"]) for hit in hits]

    def entity_ids(self, team: str, source: str | None = None) -> set[str]:
        """Document entity ids of `team` via a paged composite aggregation."""
        filters: list[dict[str, Any]] = [
            {"term": {"team": team}},
            {"term": {"result_type": "entity"}},
        ]
        if source is not None:
            filters.append({"term": {"source": source}})
        found: set[str] = set()
        after: dict[str, Any] | None = None
        while True:
            composite: dict[str, Any] = {
                "size": self._page_size,
                "sources": [{"entity": {"terms": {"field": "entity_id"}}}],
            }
            if after is not None:
                composite["after"] = after
            body = {
                "size": 0,
                "query": {"bool": {"filter": filters}},
                "aggs": {"entities": {"composite": composite}},
            }
            response = self._search_team(team, body)
            if response is None:
                return found
            aggregation = response["aggregations"]["entities"]
            found.update(bucket["key"]["entity"] for bucket in aggregation["buckets"])
            after = aggregation.get("after_key")
            if not aggregation["buckets"] or after is None:
                return found


def _source(chunk: ChunkDoc, vector: list[float]) -> dict[str, Any]:
    source: dict[str, Any] = {
        "team": chunk.team,
        "entity_id": chunk.entity_id,
        "chunk_id": chunk.chunk_id,
        "chunk_index": chunk.chunk_index,
        "chunk_type": chunk.chunk_type,
        "result_type": chunk.result_type,
        "source": chunk.source,
        "title": chunk.title,
        "text": chunk.text,
        "char_offset_start": chunk.char_offset_start,
        "char_offset_end": chunk.char_offset_end,
        "vector": vector,
    }
    for name, value in (
        ("uri", chunk.uri),
        ("memory_key", chunk.memory_key),
        ("expires_at", chunk.expires_at),
    ):
        if value is not None:
            source[name] = value
    if chunk.tags:
        source["tags"] = list(chunk.tags)
    return source


def _doc(source: dict[str, Any]) -> ChunkDoc:
    return ChunkDoc(
        team=source["team"],
        entity_id=source["entity_id"],
        chunk_id=source["chunk_id"],
        chunk_index=int(source["chunk_index"]),
        text=source.get("text", ""),
        title=source.get("title", ""),
        source=source["source"],
        result_type=source.get("result_type", "entity"),
        chunk_type=source.get("chunk_type", "semantic"),
        uri=source.get("uri"),
        char_offset_start=int(source.get("char_offset_start", 0)),
        char_offset_end=int(source.get("char_offset_end", 0)),
        memory_key=source.get("memory_key"),
        tags=tuple(source.get("tags", ())),
        expires_at=source.get("expires_at"),
    )
