"""An in-memory stand-in for the `opensearchpy.OpenSearch` client, strict about what it accepts.

It interprets exactly the subset of the OpenSearch APIs and query DSL that `OpenSearchIndex`
emits and raises `UnsupportedRequest` on anything else — an unknown query clause, body key,
parameter or mapping type — so the adapter can never lean on a feature the fake does not model.
`UnsupportedRequest` is not an `OpenSearchException`: the adapter cannot turn it into
`IndexUnavailable`, and a test fails with the fake's message.

What it models (from the OpenSearch query DSL, k-NN, bulk, msearch and aggregation docs):

- `indices.exists` / `indices.create` with a `dynamic: strict` mapping of `keyword`, `text`
  (`english` analyzer), `integer`, `double` and `knn_vector` (HNSW, `cosinesimil`) fields;
  `index: false` fields are stored but cannot be searched, as in OpenSearch.
- `bulk`: `index` (auto-generated ids; a caller-chosen `_id` is refused when `serverless`, as
  Serverless vector collections do) and `delete` (`not_found`, status 404, for a missing id),
  with OpenSearch's `errors`/`items` response; a document outside the mapping is a 400 item.
- `search` and `msearch` bodies: `query`, `size`, `from`, `_source` (bool or `excludes`),
  `sort` (`[{field: "asc"|"desc"}]`), `search_after`, `aggs` (a `composite` of `terms`
  sources, paged by `after`/`after_key`); `from + size` beyond 10,000 is refused.
- Queries: `bool` (`must`, `filter`, `should`, `must_not`, `minimum_should_match`), `term`,
  `terms`, `range` (`gt`/`gte`/`lt`/`lte`) and `exists` in filter context only, `multi_match`
  (`most_fields`, `field^boost`), and a top-level `knn` with `vector`, `k` and `filter`
  (efficient filtering: exact top-k by cosine among the documents the filter keeps; score
  `(1 + cos) / 2`).

Stricter than OpenSearch where OpenSearch would quietly do something the adapter never means:
a query on an unmapped field (OpenSearch matches nothing) and a bulk into a missing index
(OpenSearch creates it with a dynamic mapping) are refused.

Not OpenSearch's analyzer: text is lower-cased and split on anything that is not a letter or
digit, and Lucene's English stopwords are removed; there is no stemming and no possessive
filter. BM25 is Lucene's (k1 = 1.2, b = 0.75, per-field statistics over the whole index, not
the filtered set), summed over the `multi_match` fields with their boosts. Ties rank in index
order (a re-indexed document moves to the end, like a new Lucene doc id). Writes are visible at
once, as after a refresh: Serverless's refresh window is a documented limit, not modelled.

    >>> client = FakeOpenSearch()
    >>> client.indices.exists(index="chunks")
    False
"""

from __future__ import annotations

import base64
import functools
import hashlib
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from opensearchpy.exceptions import HTTP_EXCEPTIONS, OpenSearchException, TransportError

MAX_RESULT_WINDOW = 10_000
MAX_K = 10_000
_BM25_K1 = 1.2
_BM25_B = 0.75
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Lucene's `_english_` stop set, which OpenSearch's `english` analyzer removes.
ENGLISH_STOPWORDS = frozenset(
    {
        *("a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into"),
        *("is", "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then"),
        *("there", "these", "they", "this", "to", "was", "will", "with"),
    }
)
_FIELD_TYPES = frozenset({"keyword", "text", "integer", "double", "knn_vector"})
_FILTER_ONLY = frozenset({"term", "terms", "range", "exists"})
_VALUE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "keyword": lambda v: isinstance(v, str),
    "text": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "double": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
}
_RANGE_OPS: dict[str, Callable[[float, float], bool]] = {
    "gt": lambda value, bound: value > bound,
    "gte": lambda value, bound: value >= bound,
    "lt": lambda value, bound: value < bound,
    "lte": lambda value, bound: value <= bound,
}


class UnsupportedRequest(Exception):
    """The adapter sent something this fake does not interpret: extend the fake or the adapter."""


class _BadRequest(Exception):
    """A request OpenSearch itself rejects; surfaces as the client's `TransportError`."""

    def __init__(self, status: int, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.kind, self.reason = status, kind, reason

    def body(self) -> dict[str, Any]:
        cause = {"type": self.kind, "reason": self.reason}
        return {"error": {"root_cause": [cause], **cause}, "status": self.status}

    def transport_error(self) -> OpenSearchException:
        error_class = HTTP_EXCEPTIONS.get(self.status, TransportError)
        return error_class(self.status, self.kind, self.body())


def analyse(text: str) -> list[str]:
    """The fake's `english` analysis: lower-cased words, stopwords removed, no stemming.

    >>> analyse("The Deploy-checklist of the API")
    ['deploy', 'checklist', 'api']
    """
    return [w for w in _WORD.findall(text.lower()) if w not in ENGLISH_STOPWORDS]


def _only(keys: Iterable[str], allowed: set[str] | frozenset[str], where: str) -> None:
    unknown = sorted(set(keys) - allowed)
    if unknown:
        raise UnsupportedRequest(
            f"{where}: unsupported {unknown} (the fake knows {sorted(allowed)})"
        )


def _one(clause: Any, where: str) -> tuple[str, Any]:
    if not isinstance(clause, dict) or len(clause) != 1:
        raise UnsupportedRequest(f"{where} must be an object with exactly one key, got {clause!r}")
    ((key, value),) = clause.items()
    return key, value


def _clauses(value: Any, where: str) -> list[dict[str, Any]]:
    """A bool occurrence holds one clause or a list of them."""
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(item, dict) for item in items):
        raise UnsupportedRequest(f"{where} must hold query objects, got {value!r}")
    return items


@dataclass
class _Field:
    type: str
    indexed: bool = True
    dimension: int = 0


@dataclass
class _Index:
    fields: dict[str, _Field]
    knn: bool
    # id → source, in index order (a re-indexed document moves to the end).
    docs: dict[str, dict[str, Any]] = field(default_factory=dict)
    # id → text field → analysed term counts (the values of an array field together).
    tokens: dict[str, dict[str, Counter[str]]] = field(default_factory=dict)
    vectors: dict[str, dict[str, np.ndarray[Any, Any]]] = field(default_factory=dict)

    def searchable(self, name: str, types: set[str], where: str) -> _Field:
        spec = self.fields.get(name)
        if spec is None:
            # OpenSearch matches nothing on an unmapped field; that is always a bug here.
            raise UnsupportedRequest(f"{where}: field [{name}] is not in the mapping")
        if spec.type not in types:
            raise UnsupportedRequest(
                f"{where}: field [{name}] is {spec.type}; the fake supports {sorted(types)} here"
            )
        if not spec.indexed:
            raise _BadRequest(
                400,
                "query_shard_exception",
                f"failed to create query: Cannot search on field [{name}] since it is not indexed.",
            )
        return spec


class _Indices:
    def __init__(self, client: FakeOpenSearch) -> None:
        self._client = client

    def exists(self, **kwargs: Any) -> bool:
        _only(kwargs, {"index"}, "indices.exists()")
        with self._client.lock:
            self._client.calls.append(("indices.exists", kwargs))
            return kwargs["index"] in self._client.indices_by_name

    def create(self, **kwargs: Any) -> dict[str, Any]:
        _only(kwargs, {"index", "body"}, "indices.create()")
        name, body = kwargs["index"], kwargs.get("body") or {}
        with self._client.lock:
            self._client.calls.append(("indices.create", kwargs))
            if name in self._client.indices_by_name:
                raise _BadRequest(
                    400, "resource_already_exists_exception", f"index [{name}] already exists"
                ).transport_error()
            self._client.indices_by_name[name] = _parse_index_body(body)
        return {"acknowledged": True, "shards_acknowledged": True, "index": name}

    def delete(self, **kwargs: Any) -> dict[str, Any]:
        _only(kwargs, {"index"}, "indices.delete()")
        with self._client.lock:
            self._client.calls.append(("indices.delete", kwargs))
            if self._client.indices_by_name.pop(kwargs["index"], None) is None:
                raise _BadRequest(
                    404, "index_not_found_exception", f"no such index [{kwargs['index']}]"
                ).transport_error()
        return {"acknowledged": True}


def _parse_index_body(body: dict[str, Any]) -> _Index:
    _only(body, {"settings", "mappings"}, "index body")
    settings = body.get("settings", {})
    _only(settings, {"index"}, "settings")
    _only(settings.get("index", {}), {"knn"}, "settings.index")
    mappings = body.get("mappings", {})
    _only(mappings, {"dynamic", "properties"}, "mappings")
    if mappings.get("dynamic") != "strict":
        raise UnsupportedRequest("mappings: the fake models `dynamic: strict` only")
    fields: dict[str, _Field] = {}
    for name, spec in mappings.get("properties", {}).items():
        kind = spec.get("type")
        if kind not in _FIELD_TYPES:
            raise UnsupportedRequest(f"mapping of [{name}]: type {kind!r} is not modelled")
        if kind == "text":
            _only(spec, {"type", "analyzer"}, f"mapping of [{name}]")
            if spec.get("analyzer") != "english":
                raise UnsupportedRequest(f"mapping of [{name}]: only the english analyzer")
            fields[name] = _Field(kind)
        elif kind == "knn_vector":
            _only(spec, {"type", "dimension", "method"}, f"mapping of [{name}]")
            method = spec.get("method", {})
            _only(method, {"name", "space_type", "engine", "parameters"}, f"method of [{name}]")
            if (method.get("name"), method.get("space_type")) != ("hnsw", "cosinesimil"):
                raise UnsupportedRequest(f"mapping of [{name}]: only hnsw with cosinesimil")
            if method.get("engine") not in ("lucene", "faiss"):
                raise UnsupportedRequest(
                    f"mapping of [{name}]: efficient k-NN filtering needs lucene or faiss"
                )
            fields[name] = _Field(kind, dimension=int(spec["dimension"]))
        else:
            _only(spec, {"type", "index"}, f"mapping of [{name}]")
            fields[name] = _Field(kind, indexed=bool(spec.get("index", True)))
    return _Index(fields=fields, knn=bool(settings.get("index", {}).get("knn", False)))


class FakeOpenSearch:
    """The client surface `OpenSearchIndex` uses: `indices.exists/create`, `bulk`, `search`,
    `msearch`. Thread-safe (one lock); `calls` records every call as `(method, kwargs)`."""

    def __init__(self, *, serverless: bool = True) -> None:
        self.serverless = serverless
        self.lock = threading.RLock()
        self.indices_by_name: dict[str, _Index] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.indices = _Indices(self)
        self._next_id = 0

    def count(self, **kwargs: Any) -> dict[str, Any]:
        _only(kwargs, {"index"}, "count()")
        with self.lock:
            self.calls.append(("count", kwargs))
            return {"count": len(self.indices_by_name[kwargs["index"]].docs)}

    # ------------------------------------------------------------------ writes

    def bulk(self, **kwargs: Any) -> dict[str, Any]:
        _only(kwargs, {"body"}, "bulk()")
        lines = kwargs["body"]
        if not isinstance(lines, list) or not all(isinstance(line, dict) for line in lines):
            raise UnsupportedRequest("bulk(): the fake takes the body as a list of objects")
        with self.lock:
            self.calls.append(("bulk", kwargs))
            items: list[dict[str, Any]] = []
            position = 0
            while position < len(lines):
                action, meta = _one(lines[position], "bulk action line")
                position += 1
                if not isinstance(meta, dict):
                    raise UnsupportedRequest(f"bulk {action} metadata must be an object")
                _only(meta, {"_index", "_id"}, f"bulk {action} metadata")
                index = self._bulk_index(meta)
                if action == "index":
                    if position >= len(lines):
                        raise _BadRequest(
                            400, "illegal_argument_exception", "index action without a source"
                        ).transport_error()
                    items.append(self._index_doc(meta, index, lines[position]))
                    position += 1
                elif action == "delete":
                    items.append(self._delete_doc(meta, index))
                else:
                    raise UnsupportedRequest(f"bulk action {action!r} is not modelled")
            errors = any("error" in op for item in items for op in item.values())
            return {"took": 1, "errors": errors, "items": items}

    def _bulk_index(self, meta: dict[str, Any]) -> _Index:
        name = meta.get("_index")
        if name not in self.indices_by_name:
            raise UnsupportedRequest(
                f"bulk into index {name!r}, which does not exist: OpenSearch would create it "
                "with a dynamic mapping (call ensure_index first)"
            )
        return self.indices_by_name[name]

    def _index_doc(
        self, meta: dict[str, Any], index: _Index, source: dict[str, Any]
    ) -> dict[str, Any]:
        name = meta["_index"]
        if "_id" in meta and self.serverless:
            return _item_error(
                "index",
                name,
                400,
                "illegal_argument_exception",
                "Document ID is not supported in create/index operation request",
            )
        problem = _mapping_problem(index, source)
        if problem is not None:
            return _item_error("index", name, 400, *problem)
        doc_id = meta.get("_id") or self._generated_id()
        created = doc_id not in index.docs
        index.docs.pop(doc_id, None)
        index.docs[doc_id] = dict(source)
        index.tokens[doc_id] = {
            n: Counter(t for v in _values(source[n]) for t in analyse(v))
            for n, spec in index.fields.items()
            if spec.type == "text" and n in source
        }
        index.vectors[doc_id] = {
            n: np.asarray(source[n], dtype=np.float64)
            for n, spec in index.fields.items()
            if spec.type == "knn_vector" and n in source
        }
        return {
            "index": {
                "_index": name,
                "_id": doc_id,
                "_version": 1,
                "result": "created" if created else "updated",
                "_shards": {"total": 1, "successful": 1, "failed": 0},
                "status": 201 if created else 200,
            }
        }

    def _delete_doc(self, meta: dict[str, Any], index: _Index) -> dict[str, Any]:
        doc_id = meta.get("_id")
        if not isinstance(doc_id, str):
            raise UnsupportedRequest(f"bulk delete needs an `_id`, got {meta!r}")
        found = index.docs.pop(doc_id, None) is not None
        index.tokens.pop(doc_id, None)
        index.vectors.pop(doc_id, None)
        return {
            "delete": {
                "_index": meta["_index"],
                "_id": doc_id,
                "result": "deleted" if found else "not_found",
                "status": 200 if found else 404,
            }
        }

    def _generated_id(self) -> str:
        # OpenSearch's auto ids are 20 URL-safe base64 characters; deterministic here.
        self._next_id += 1
        digest = hashlib.sha256(str(self._next_id).encode()).digest()
        return base64.urlsafe_b64encode(digest).decode()[:20]

    # ------------------------------------------------------------------ reads

    def search(self, **kwargs: Any) -> dict[str, Any]:
        _only(kwargs, {"index", "body"}, "search()")
        with self.lock:
            self.calls.append(("search", kwargs))
            try:
                return self._search(kwargs["index"], kwargs["body"])
            except _BadRequest as error:
                raise error.transport_error() from None

    def msearch(self, **kwargs: Any) -> dict[str, Any]:
        _only(kwargs, {"index", "body"}, "msearch()")
        lines = kwargs["body"]
        if not isinstance(lines, list) or len(lines) % 2:
            raise UnsupportedRequest("msearch(): body must be a list of header/body pairs")
        with self.lock:
            self.calls.append(("msearch", kwargs))
            responses: list[dict[str, Any]] = []
            for header, body in zip(lines[::2], lines[1::2], strict=True):
                _only(header, {"index"}, "msearch header")
                try:
                    answer = self._search(header.get("index", kwargs.get("index")), body)
                    responses.append({**answer, "status": 200})
                except _BadRequest as error:
                    responses.append(error.body())
            return {"took": 1, "responses": responses}

    def _search(self, name: Any, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise UnsupportedRequest(f"search body must be an object, got {body!r}")
        _only(
            body,
            {"query", "size", "from", "_source", "sort", "search_after", "aggs"},
            "search body",
        )
        index = self.indices_by_name.get(name)
        if index is None:
            raise _BadRequest(404, "index_not_found_exception", f"no such index [{name}]")
        size, start = body.get("size", 10), body.get("from", 0)
        if not (isinstance(size, int) and isinstance(start, int) and size >= 0 and start >= 0):
            raise UnsupportedRequest(f"size and from must be non-negative integers: {body!r}")
        if size + start > MAX_RESULT_WINDOW:
            raise _BadRequest(
                400,
                "illegal_argument_exception",
                f"Result window is too large, from + size must be less than or equal to: "
                f"[{MAX_RESULT_WINDOW}] but was [{size + start}].",
            )
        if "query" not in body:
            raise UnsupportedRequest("a search without `query` (match_all) is not modelled")
        _filter_source({}, body.get("_source", True))  # rejected even when nothing matches
        scored = _evaluate_root(index, body["query"])
        ordered, sort_values = _order(index, scored, body)
        page = ordered[start : start + size]
        hits = []
        for doc_id in page:
            hit: dict[str, Any] = {
                "_index": name,
                "_id": doc_id,
                "_score": None if sort_values else scored[doc_id],
            }
            source = _filter_source(index.docs[doc_id], body.get("_source", True))
            if source is not None:
                hit["_source"] = source
            if sort_values:
                hit["sort"] = sort_values[doc_id]
            hits.append(hit)
        total = len(ordered)
        response: dict[str, Any] = {
            "took": 1,
            "timed_out": False,
            "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
            "hits": {
                "total": {
                    "value": min(total, MAX_RESULT_WINDOW),
                    "relation": "eq" if total <= MAX_RESULT_WINDOW else "gte",
                },
                "max_score": None if sort_values or not page else max(scored[d] for d in page),
                "hits": hits,
            },
        }
        if "aggs" in body:
            response["aggregations"] = _aggregate(index, ordered, body["aggs"])
        return response


# ---------------------------------------------------------------------- documents


def _values(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _item_error(action: str, name: str, status: int, kind: str, reason: str) -> dict[str, Any]:
    return {action: {"_index": name, "status": status, "error": {"type": kind, "reason": reason}}}


def _mapping_problem(index: _Index, source: Any) -> tuple[str, str] | None:
    """Why OpenSearch would refuse `source` under the index's strict mapping, or None."""
    if not isinstance(source, dict):
        return "mapper_parsing_exception", "the document source must be an object"
    for name, value in source.items():
        spec = index.fields.get(name)
        if spec is None:
            return (
                "strict_dynamic_mapping_exception",
                f"mapping set to strict, dynamic introduction of [{name}] within [_doc] "
                "is not allowed",
            )
        if spec.type == "knn_vector":
            ok = (
                isinstance(value, list)
                and len(value) == spec.dimension
                and all(isinstance(x, int | float) and not isinstance(x, bool) for x in value)
            )
        else:
            ok = all(_VALUE_CHECKS[spec.type](v) for v in _values(value))
        if not ok:
            return (
                "mapper_parsing_exception",
                f"failed to parse field [{name}] of type [{spec.type}]: {value!r:.60}",
            )
    return None


def _filter_source(source: dict[str, Any], spec: Any) -> dict[str, Any] | None:
    if spec is True:
        return dict(source)
    if spec is False:
        return None
    if isinstance(spec, dict) and set(spec) == {"excludes"} and isinstance(spec["excludes"], list):
        return {k: v for k, v in source.items() if k not in spec["excludes"]}
    raise UnsupportedRequest(f"_source: the fake supports true, false or {{excludes}}: {spec!r}")


# ---------------------------------------------------------------------- queries


def _evaluate_root(index: _Index, query: Any) -> dict[str, float]:
    """Matching document ids → score, for the body's `query` (scoring context)."""
    kind, spec = _one(query, "query")
    if kind == "knn":
        return _knn(index, spec)
    return _evaluate(index, query, scoring=True)


def _evaluate(index: _Index, query: Any, *, scoring: bool) -> dict[str, float]:
    kind, spec = _one(query, "query clause")
    if kind in _FILTER_ONLY and scoring:
        raise UnsupportedRequest(
            f"{kind}: the fake interprets it in filter context only (inside bool.filter, "
            "bool.must_not, a filter-context should, or a knn filter)"
        )
    if kind == "bool":
        return _bool(index, spec, scoring=scoring)
    if kind == "multi_match":
        return _multi_match(index, spec, scoring=scoring)
    if kind == "term":
        name, value = _one(spec, "term")
        _scalar(value, "term")
        index.searchable(name, {"keyword", "integer", "double"}, "term")
        return _matching(index, name, lambda v: v == value)
    if kind == "terms":
        name, values = _one(spec, "terms")
        if not isinstance(values, list):
            raise UnsupportedRequest(f"terms [{name}] needs a list of values, got {values!r}")
        for value in values:
            _scalar(value, "terms")
        index.searchable(name, {"keyword", "integer", "double"}, "terms")
        return _matching(index, name, lambda v: v in values)
    if kind == "range":
        name, bounds = _one(spec, "range")
        if not isinstance(bounds, dict) or not bounds:
            raise UnsupportedRequest(f"range [{name}] needs bounds, got {bounds!r}")
        _only(bounds, set(_RANGE_OPS), f"range [{name}]")
        for bound in bounds.values():
            if not isinstance(bound, int | float) or isinstance(bound, bool):
                raise UnsupportedRequest(f"range [{name}]: numeric bounds only, got {bound!r}")
        index.searchable(name, {"integer", "double"}, "range")
        return _matching(
            index, name, lambda v: all(_RANGE_OPS[op](v, b) for op, b in bounds.items())
        )
    if kind == "exists":
        if not isinstance(spec, dict):
            raise UnsupportedRequest(f"exists needs {{field}}, got {spec!r}")
        _only(spec, {"field"}, "exists")
        name = spec["field"]
        if name not in index.fields:
            raise UnsupportedRequest(f"exists: field [{name}] is not in the mapping")
        return {doc_id: 0.0 for doc_id, source in index.docs.items() if name in source}
    if kind == "knn":
        raise UnsupportedRequest("knn: the fake interprets it only as the top-level query")
    raise UnsupportedRequest(f"query clause {kind!r} is not modelled by the fake")


def _scalar(value: Any, where: str) -> None:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise UnsupportedRequest(f"{where}: value must be a string or a number, got {value!r}")


def _matching(index: _Index, name: str, test: Callable[[Any], bool]) -> dict[str, float]:
    return {
        doc_id: 0.0
        for doc_id, source in index.docs.items()
        if name in source and any(test(v) for v in _values(source[name]))
    }


def _bool(index: _Index, spec: Any, *, scoring: bool) -> dict[str, float]:
    if not isinstance(spec, dict):
        raise UnsupportedRequest(f"bool must be an object, got {spec!r}")
    _only(spec, {"must", "filter", "should", "must_not", "minimum_should_match"}, "bool")
    must = [_evaluate(index, c, scoring=scoring) for c in _clauses(spec.get("must", []), "must")]
    filters = [
        _evaluate(index, c, scoring=False) for c in _clauses(spec.get("filter", []), "filter")
    ]
    should = [
        _evaluate(index, c, scoring=scoring) for c in _clauses(spec.get("should", []), "should")
    ]
    must_not = [
        _evaluate(index, c, scoring=False) for c in _clauses(spec.get("must_not", []), "must_not")
    ]
    # OpenSearch: 1 when there are should clauses but no must or filter clause, else 0.
    default = 1 if should and not must and not filters else 0
    minimum = spec.get("minimum_should_match", default)
    if not isinstance(minimum, int) or isinstance(minimum, bool):
        raise UnsupportedRequest(f"minimum_should_match: integers only, got {minimum!r}")
    result: dict[str, float] = {}
    for doc_id in index.docs:
        if any(doc_id not in clause for clause in (*must, *filters)):
            continue
        if any(doc_id in clause for clause in must_not):
            continue
        matched = [clause[doc_id] for clause in should if doc_id in clause]
        if len(matched) < minimum:
            continue
        result[doc_id] = sum(clause[doc_id] for clause in must) + sum(matched)
    return result


def _multi_match(index: _Index, spec: Any, *, scoring: bool) -> dict[str, float]:
    if not isinstance(spec, dict):
        raise UnsupportedRequest(f"multi_match must be an object, got {spec!r}")
    _only(spec, {"query", "fields", "type"}, "multi_match")
    if spec.get("type") != "most_fields":
        raise UnsupportedRequest(f"multi_match type {spec.get('type')!r}: only most_fields")
    if not isinstance(spec.get("query"), str) or not isinstance(spec.get("fields"), list):
        raise UnsupportedRequest(f"multi_match needs a string query and a list of fields: {spec}")
    terms = analyse(spec["query"])
    scores: dict[str, float] = {}
    for entry in spec["fields"]:
        name, _, boost_text = str(entry).partition("^")
        try:
            boost = float(boost_text) if boost_text else 1.0
        except ValueError:
            raise UnsupportedRequest(f"multi_match field {entry!r}: bad boost") from None
        index.searchable(name, {"text"}, "multi_match")
        for doc_id, score in _bm25(index, name, terms).items():
            scores[doc_id] = scores.get(doc_id, 0.0) + boost * score
    return scores if scoring else dict.fromkeys(scores, 0.0)


def _bm25(index: _Index, name: str, terms: list[str]) -> dict[str, float]:
    """Lucene's BM25 of one field: a `match` query (terms OR'ed) on `name`."""
    counts = {d: t[name] for d, t in index.tokens.items() if t.get(name)}
    if not counts or not terms:
        return {}
    lengths = {d: c.total() for d, c in counts.items()}
    count, average = len(lengths), sum(lengths.values()) / len(lengths)
    scores: dict[str, float] = {}
    for term in terms:
        frequencies = {d: c[term] for d, c in counts.items() if c[term]}
        idf = math.log(1 + (count - len(frequencies) + 0.5) / (len(frequencies) + 0.5))
        for doc_id, tf in frequencies.items():
            norm = _BM25_K1 * (1 - _BM25_B + _BM25_B * lengths[doc_id] / average)
            scores[doc_id] = scores.get(doc_id, 0.0) + idf * tf / (tf + norm)
    return scores


def _knn(index: _Index, spec: Any) -> dict[str, float]:
    name, params = _one(spec, "knn")
    if not isinstance(params, dict):
        raise UnsupportedRequest(f"knn [{name}] must be an object, got {params!r}")
    _only(params, {"vector", "k", "filter"}, f"knn [{name}]")
    field_spec = index.searchable(name, {"knn_vector"}, "knn")
    vector, k = params.get("vector"), params.get("k")
    if not isinstance(vector, list) or len(vector) != field_spec.dimension:
        raise _BadRequest(
            400,
            "illegal_argument_exception",
            f"Query vector has invalid dimension: {len(vector or [])}. "
            f"Dimension should be: {field_spec.dimension}",
        )
    if not isinstance(k, int) or isinstance(k, bool) or not 0 < k <= MAX_K:
        raise _BadRequest(400, "illegal_argument_exception", f"[knn] requires 0 < k <= {MAX_K}")
    if not index.knn:
        raise UnsupportedRequest("knn on an index created without settings.index.knn = true")
    allowed = (
        _evaluate(index, params["filter"], scoring=False) if "filter" in params else index.docs
    )
    query = np.asarray(vector, dtype=np.float64)
    query_norm = float(np.linalg.norm(query))
    scored: list[tuple[float, int, str]] = []
    for position, doc_id in enumerate(index.docs):
        stored = index.vectors[doc_id].get(name)
        if doc_id not in allowed or stored is None:
            continue
        denominator = query_norm * float(np.linalg.norm(stored))
        cosine = float(query @ stored) / denominator if denominator else 0.0
        scored.append(((1 + cosine) / 2, position, doc_id))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return {doc_id: score for score, _, doc_id in scored[:k]}


# ---------------------------------------------------------------------- ordering, aggregations


def _order(
    index: _Index, scored: dict[str, float], body: dict[str, Any]
) -> tuple[list[str], dict[str, list[Any]]]:
    """Matching ids in response order, and each hit's `sort` values when the body sorts."""
    position = {doc_id: i for i, doc_id in enumerate(index.docs)}
    if "sort" not in body:
        if "search_after" in body:
            raise _BadRequest(400, "illegal_argument_exception", "search_after needs a sort")
        return sorted(scored, key=lambda d: (-scored[d], position[d])), {}
    sort = body["sort"]
    if not isinstance(sort, list) or not sort:
        raise UnsupportedRequest(f"sort: a list of {{field: asc|desc}} only, got {sort!r}")
    keys: list[tuple[str, str]] = []
    for entry in sort:
        name, direction = _one(entry, "sort entry")
        if direction not in ("asc", "desc"):
            raise UnsupportedRequest(f"sort [{name}]: order must be 'asc' or 'desc'")
        if index.fields.get(name, _Field("none")).type not in ("keyword", "integer", "double"):
            raise UnsupportedRequest(f"sort [{name}]: keyword or numeric fields only")
        keys.append((name, direction))
    values: dict[str, list[Any]] = {}
    for doc_id in scored:
        source = index.docs[doc_id]
        if any(name not in source or isinstance(source[name], list) for name, _ in keys):
            raise UnsupportedRequest("sort: every matched document needs one value per field")
        values[doc_id] = [source[name] for name, _ in keys]

    def compare(left: list[Any], right: list[Any]) -> int:
        for (_, direction), a, b in zip(keys, left, right, strict=True):
            if a != b:
                sign = 1 if a > b else -1
                return sign if direction == "asc" else -sign
        return 0

    def by_sort(a: str, b: str) -> int:
        return compare(values[a], values[b]) or position[a] - position[b]

    ordered = sorted(scored, key=functools.cmp_to_key(by_sort))
    after = body.get("search_after")
    if after is not None:
        if not isinstance(after, list) or len(after) != len(keys):
            raise _BadRequest(
                400, "illegal_argument_exception", "search_after must match the sort fields"
            )
        if body.get("from", 0) != 0:
            raise _BadRequest(
                400, "illegal_argument_exception", "`from` must be 0 when search_after is used"
            )
        ordered = [d for d in ordered if compare(values[d], after) > 0]
    return ordered, values


def _aggregate(index: _Index, matched: list[str], aggs: Any) -> dict[str, Any]:
    if not isinstance(aggs, dict) or not aggs:
        raise UnsupportedRequest(f"aggs must name at least one aggregation, got {aggs!r}")
    result: dict[str, Any] = {}
    for agg_name, spec in aggs.items():
        kind, composite = _one(spec, f"aggregation {agg_name}")
        if kind != "composite":
            raise UnsupportedRequest(f"aggregation {kind!r} is not modelled (composite only)")
        _only(composite, {"size", "sources", "after"}, "composite")
        size = composite.get("size", 10)
        if not isinstance(size, int) or size <= 0:
            raise UnsupportedRequest(f"composite size must be a positive integer: {size!r}")
        names: list[str] = []
        fields: list[str] = []
        for source in composite.get("sources") or []:
            key_name, terms_spec = _one(source, "composite source")
            kind, terms = _one(terms_spec, f"composite source {key_name}")
            if kind != "terms" or not isinstance(terms, dict):
                raise UnsupportedRequest(f"composite source {kind!r}: terms only")
            _only(terms, {"field"}, f"composite terms source {key_name}")
            index.searchable(terms["field"], {"keyword", "integer", "double"}, "composite")
            names.append(key_name)
            fields.append(terms["field"])
        if not names:
            raise UnsupportedRequest("composite needs at least one source")
        counts: dict[tuple[Any, ...], int] = {}
        for doc_id in matched:
            source = index.docs[doc_id]
            if all(f in source for f in fields):
                key = tuple(source[f] for f in fields)
                counts[key] = counts.get(key, 0) + 1
        keys = sorted(counts)
        if "after" in composite:
            after = composite["after"]
            if not isinstance(after, dict) or set(after) != set(names):
                raise _BadRequest(
                    400, "illegal_argument_exception", f"composite after must name {names}"
                )
            floor = tuple(after[n] for n in names)
            keys = [k for k in keys if k > floor]
        buckets = [
            {"key": dict(zip(names, key, strict=True)), "doc_count": counts[key]}
            for key in keys[:size]
        ]
        answer: dict[str, Any] = {"buckets": buckets}
        if buckets:
            answer["after_key"] = buckets[-1]["key"]
        result[agg_name] = answer
    return result
