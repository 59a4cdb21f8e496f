"""Conflict and duplicate detection: the curator's second job, after filing.

For one active memory the detector reads its candidates (the team's best hybrid matches for
its text, plus every active memory about the same topic), measures their cosine similarity in
the search engine's embedding space, and judges each pair with `judge`:

- **duplicate**: the same normalised body, or a cosine of at least `DUPLICATE_COSINE` with no
  sign that the two claims differ;
- **conflict**: about the same topic (subject, else title, else key), or at least
  `CONFLICT_COSINE` alike, and the claims differ by a negation, a number, an antonym, or (at
  least `VALUE_COSINE` alike or same topic) a swapped value word.

Neither holds between two different things (`distinct_entities`: "service 1 owns port 8001"
/ "service 2 owns port 8002"), nor is a conflict kept between memories whose explicit subjects
differ (`subject_gate`). Two memories of one version chain never conflict. A finding's id
is derived from its kind and members, so running the detector again over the same memory — a
replayed stream record, a retry — adds nothing; a finding once resolved or dismissed is never
re-opened by it.

The thresholds were fitted on the train part of tests/bench/memory_pairs.jsonl only (`cairn
bench curation --fit`); `make bench` grades them on the held-out part (docs/memory.md).
Where a model judges better than a rule, `ContradictionJudge` is the port: the AWS stack may
put Bedrock behind it; the default is the rule set here and needs no model.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import queue
import re
import threading
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final, Literal, Protocol

from shared.domain_events.emitter import DomainEvents
from shared.domain_events.models import Kind
from shared.memory.models import Finding, Memory
from shared.memory.ports import FindingStore, MemoryIndex, MemorySimilarity, MemoryStore

# A child of the service logger (shared.observability), without importing it: that module
# loads Powertools, which tool modules (imported for specs only) must not pay for.
logger = logging.getLogger("cairn.memory.detection")

# The actor of what detection finds: no caller waits on it (the stream-fed curator in AWS).
CURATOR_ACTOR: Final = "curator"
DUPLICATE_COSINE = 0.925
CONFLICT_COSINE = 0.575
VALUE_COSINE = 0.9
CANDIDATES = 10
# Memories sharing the topic's words, checked for the very same topic.
TOPIC_CANDIDATES = 50

_WORD = re.compile(r"[a-z0-9]+(?:[.:][0-9]+)*")
_NUMBER = re.compile(r"\d+(?:[.:]\d+)*")
NEGATIONS = frozenset(
    {"not", "no", "never", "none", "nothing", "cannot", "without", "neither", "nor", "nobody"}
)
_CONTRACTED = re.compile(r"\b\w+n't\b")
_ANTONYM_PAIRS = (
    ("enabled", "disabled"),
    ("enable", "disable"),
    ("on", "off"),
    ("allowed", "forbidden"),
    ("allow", "forbid"),
    ("allowed", "prohibited"),
    ("allowed", "banned"),
    ("true", "false"),
    ("yes", "no"),
    ("always", "never"),
    ("increase", "decrease"),
    ("increased", "decreased"),
    ("before", "after"),
    ("public", "private"),
    ("required", "optional"),
    ("mandatory", "optional"),
    ("accept", "reject"),
    ("accepted", "rejected"),
    ("include", "exclude"),
    ("included", "excluded"),
    ("start", "stop"),
    ("started", "stopped"),
    ("open", "closed"),
    ("up", "down"),
    ("more", "less"),
    ("minimum", "maximum"),
    ("min", "max"),
    ("success", "failure"),
    ("succeeded", "failed"),
    ("passes", "fails"),
    ("sync", "async"),
    ("synchronous", "asynchronous"),
    ("tabs", "spaces"),
    ("light", "dark"),
    ("higher", "lower"),
    ("faster", "slower"),
    ("early", "late"),
    ("earlier", "later"),
    ("first", "last"),
    ("internal", "external"),
    ("deprecated", "supported"),
    ("stable", "unstable"),
    ("safe", "unsafe"),
    ("valid", "invalid"),
    ("approved", "denied"),
    ("active", "inactive"),
    ("online", "offline"),
    ("frozen", "open"),
    ("use", "avoid"),
    ("prefer", "avoid"),
    ("prefers", "avoids"),
    ("likes", "dislikes"),
    ("love", "hate"),
    ("loves", "hates"),
    ("add", "remove"),
    ("added", "removed"),
    ("weekdays", "weekends"),
    ("morning", "evening"),
    ("am", "pm"),
    ("monday", "friday"),
    ("utc", "local"),
)
ANTONYMS: dict[str, frozenset[str]] = {}
for _a, _b in _ANTONYM_PAIRS:
    ANTONYMS[_a] = ANTONYMS.get(_a, frozenset()) | {_b}
    ANTONYMS[_b] = ANTONYMS.get(_b, frozenset()) | {_a}
STOPWORDS = (
    frozenset(
        [
            "a",
            "an",
            "the",
            "is",
            "are",
            "was",
            "were",
            "be",
            "been",
            "being",
            "of",
            "to",
            "in",
            "on",
            "at",
            "by",
            "for",
            "with",
            "from",
            "as",
            "and",
            "or",
            "but",
            "it",
            "its",
            "this",
            "that",
            "these",
            "those",
            "we",
            "our",
            "us",
            "you",
            "your",
            "they",
            "their",
            "he",
            "she",
            "his",
            "her",
            "i",
            "me",
            "my",
            "do",
            "does",
            "did",
            "has",
            "have",
            "had",
            "will",
            "would",
            "should",
            "can",
            "could",
            "may",
            "might",
            "must",
            "shall",
            "so",
            "than",
            "then",
            "there",
            "here",
            "all",
            "any",
            "each",
            "every",
            "some",
            "such",
            "also",
            "just",
            "only",
            "very",
            "into",
            "onto",
            "over",
            "under",
            "about",
            "which",
            "who",
            "whom",
            "what",
            "when",
            "where",
            "why",
            "how",
        ]
    )
    - NEGATIONS
    - {"on"}
)


def normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


_LETTERS_AND_DIGITS = re.compile(r"[^\W_]+")


def spelling(text: str) -> str:
    """`text` with case, punctuation, separators and spacing taken out: what two spellings of
    one thing have in common ("restart-check", "Restart check", "restart_check", "RestartCheck").

    >>> spelling("Restart check!") == spelling("restart-check") == spelling("restart_check")
    True
    """
    return "".join(_LETTERS_AND_DIGITS.findall(unicodedata.normalize("NFKC", text).casefold()))


def same_words(a: str, b: str) -> bool:
    """Whether two texts differ only in case, punctuation or separators: the same memory
    written twice, a duplicate, never a conflict (no word or number of one is missing from
    the other, so neither can contradict it)."""
    return spelling(a) == spelling(b) != ""


def topic(memory: Memory) -> str | None:
    """What a memory is about, for "the same subject (or key, or title)"."""
    raw = memory.subject or memory.title or memory.key
    if not raw:
        return None
    return " ".join(_WORD.findall(raw.casefold().replace("_", " ").replace("-", " "))) or None


def _tokens(text: str) -> list[str]:
    lowered = text.casefold().replace("’", "'")
    negated = ["not"] * len(_CONTRACTED.findall(lowered))
    return _WORD.findall(_CONTRACTED.sub(" ", lowered)) + negated


def signals(a: str, b: str) -> list[str]:
    """Why two sentences' claims may differ: `negation`, `number`, `antonym`, `value`."""
    ta, tb = _tokens(a), _tokens(b)
    wa, wb = set(ta), set(tb)
    found: list[str] = []
    if bool(wa & NEGATIONS) != bool(wb & NEGATIONS):
        found.append("negation")
    na, nb = set(_NUMBER.findall(a)), set(_NUMBER.findall(b))
    if na and nb and na != nb:
        found.append("number")
    only_a, only_b = wa - wb, wb - wa
    if any(ANTONYMS.get(w, frozenset()) & only_b for w in only_a):
        found.append("antonym")
    ca, cb = wa - STOPWORDS - NEGATIONS, wb - STOPWORDS - NEGATIONS
    diff_a, diff_b = ca - cb, cb - ca
    union = ca | cb
    overlap = len(ca & cb) / len(union) if union else 0.0
    if 1 <= len(diff_a) <= 3 and 1 <= len(diff_b) <= 3 and overlap >= 0.4:
        found.append("value")
    return found


_NUMBER_WORDS = frozenset(
    {
        *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"),
        *("eleven", "twelve", "fifteen", "twenty", "thirty", "forty", "fifty", "sixty"),
        *("hundred", "thousand", "million", "billion", "once", "twice", "half", "double"),
    }
)


def _marks(text: str) -> set[str]:
    """The words of `text` that name a quantity or an identity: numbers (digits or words),
    versions, ports, ids (`svc-42`, `v2`)."""
    return {
        w
        for w in _WORD.findall(text.casefold())
        if w in _NUMBER_WORDS or any(c.isdigit() for c in w)
    }


def same_claims(a: str, b: str) -> bool:
    """Whether two alike texts say the same thing in other words: neither negates what the
    other says, swaps an antonym, nor names a number or identifier the other does not.

    The curator merges (and deletes) only such a pair: cosine alone calls "service A runs on
    ARM" and "service B runs on ARM" copies when A and B are opaque ids (MiniLM: up to 0.98).

    >>> same_claims("The freeze starts Friday.", "The freeze starts on Friday.")
    True
    >>> same_claims("Service svc1a runs on ARM.", "Service svc9z runs on ARM.")
    False
    """
    strong = {"negation", "number", "antonym"} & set(signals(a, b))
    return not strong and _marks(a) == _marks(b)


# Words that start a sentence's predicate: copulas, auxiliaries, and verbs memories use to
# state a fact about a thing. A differing identifier before the first of them names the thing
# the sentence is about (its subject); one after it is a value the thing has.
_PREDICATE_WORDS = frozenset(
    {
        *("is", "are", "was", "were", "be", "been", "has", "have", "had", "will", "would"),
        *("should", "must", "can", "could", "may", "might", "shall", "does", "do", "did"),
        *("owns", "own", "runs", "run", "uses", "use", "holds", "hosts", "serves", "needs"),
        *("belongs", "lives", "listens", "handles", "stores", "requires", "depends", "points"),
        *("sends", "calls", "reads", "writes", "takes", "gets", "goes", "keeps", "stays"),
    }
)


def _predicate_word(word: str) -> bool:
    # A third-person verb ("drains", "deploys") or a participle ("drained") also starts a
    # predicate. A plural noun ("logs of node 3") is mistaken for one, which only keeps a
    # pair a conflict: the rule errs towards reporting, never towards hiding.
    if word in _PREDICATE_WORDS:
        return True
    if len(word) < 4 or not word.isalpha():
        return False
    return (word.endswith("s") and not word.endswith(("ss", "us", "is"))) or word.endswith("ed")


def _identifier(word: str) -> bool:
    """A word that names a thing rather than describing it: one with a digit (`7`,
    `quokka0329830762`, `n3f9`)."""
    return any(c.isdigit() for c in word)


def distinct_entities(a: str, b: str) -> bool:
    """Whether two sentences state facts about two different things, told apart by an
    identifier in subject position: "Service 1 owns port 8001" / "Service 2 owns port 8002",
    "The quokka0329830762 service runs on ARM" / the same with another id.

    The rule, over the two word sequences aligned: their first difference is an identifier
    on each side (a number used as a name, an opaque id, a single letter against a single
    letter), no predicate word comes before it, and one comes after it. Then whatever else
    differs is what each thing has, not a change to one thing's value. A difference after
    the predicate ("Service 1 owns port 8001" / "... port 8002", "Port 8001 belongs to
    service 1" / "... service 2") is one thing with two values: still a conflict.

    >>> distinct_entities("Service 1 owns port 8001.", "Service 2 owns port 8002.")
    True
    >>> distinct_entities("Service 1 owns port 8001.", "Service 1 owns port 8002.")
    False
    """
    wa, wb = _WORD.findall(a.casefold()), _WORD.findall(b.casefold())
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=wa, b=wb, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if op != "replace":
            return False  # a word added or dropped, not a name swapped
        left, right = wa[i1:i2], wb[j1:j2]
        named = all(_identifier(w) for w in left + right) or (
            # "Service A" / "Service B": lettered names (not the article "a" against a word).
            len(left) == len(right) == 1 and len(left[0]) == len(right[0]) == 1
        )
        return (
            named
            and not any(_predicate_word(w) for w in wa[:i1])
            and any(_predicate_word(w) for w in wa[i2:])
        )
    return False


def distinct_subjects(a: str | None, b: str | None) -> bool:
    """Whether two memories' explicit `subject` fields say they are about different things.
    Only explicit subjects count: a title or key is a label, and two labels may differ for
    one thing."""
    if not a or not b:
        return False
    return " ".join(_WORD.findall(a.casefold())) != " ".join(_WORD.findall(b.casefold()))


@dataclass(frozen=True)
class Verdict:
    kind: Literal["conflict", "duplicate"] | None
    signals: tuple[str, ...] = ()


def subject_gate(verdict: Verdict, subject_a: str | None, subject_b: str | None) -> Verdict:
    """A conflict between memories whose explicit subjects differ is two facts about two
    things ("prefers dark mode" for alice, "prefers light mode" for bob): not a conflict.
    A duplicate stays one: the same fact filed under two subjects is still a copy."""
    if verdict.kind == "conflict" and distinct_subjects(subject_a, subject_b):
        return Verdict(None, (*verdict.signals, "distinct_subjects"))
    return verdict


@dataclass(frozen=True)
class Thresholds:
    duplicate: float = DUPLICATE_COSINE
    conflict: float = CONFLICT_COSINE
    value: float = VALUE_COSINE


def judge(
    a: str, b: str, cosine: float, same_topic: bool, thresholds: Thresholds = Thresholds()
) -> Verdict:
    """Whether two memories' texts conflict, duplicate each other, or neither.

    >>> judge("Deploys are frozen on Fridays.", "Deploys are not frozen on Fridays.", 0.9, False)
    Verdict(kind='conflict', signals=('negation',))
    """
    if normal(a) == normal(b):
        return Verdict("duplicate", ("same_body",))
    if same_words(a, b):
        return Verdict("duplicate", ("same_words",))
    found = tuple(signals(a, b))
    # Two facts about two things (a template filled for service 1 and service 2) neither
    # contradict nor repeat each other, however alike the sentences are.
    if distinct_entities(a, b):
        return Verdict(None, (*found, "distinct_entities"))
    strong = [s for s in found if s != "value"]
    if strong and (same_topic or cosine >= thresholds.conflict):
        return Verdict("conflict", found)
    # A swapped word alone is weak: paraphrases swap words too, and they are the most alike.
    if (
        "value" in found
        and (same_topic or cosine >= thresholds.value)
        and (cosine < thresholds.duplicate)
    ):
        return Verdict("conflict", found)
    if cosine >= thresholds.duplicate:
        return Verdict("duplicate", found)
    return Verdict(None, found)


class ContradictionJudge(Protocol):
    """Judges a pair of memory texts (the rule set by default; a model where configured)."""

    def __call__(self, a: str, b: str, cosine: float, same_topic: bool) -> Verdict: ...


def finding_id(kind: str, members: list[str]) -> str:
    digest = hashlib.sha256(f"{kind}:{','.join(sorted(members))}".encode()).hexdigest()
    return ("cfl_" if kind == "conflict" else "dup_") + digest[:24]


def _text(memory: Memory) -> str:
    return memory.content


def _detectable(memory: Memory) -> bool:
    # An engram is wallet data and an expiring memory is scratch: neither is curated.
    return memory.active and memory.wallet_address is None and memory.expires_at is None


@dataclass(eq=False)
class Detector:
    """Finds conflicts and duplicate clusters around one memory and records them."""

    store: MemoryStore
    index: MemoryIndex
    similarity: MemorySimilarity
    findings: FindingStore
    judge_pair: ContradictionJudge = judge
    clock: Callable[[], float] = time.time
    events: DomainEvents = field(default_factory=DomainEvents)

    def detect(self, team: str, memory_id: str) -> list[Finding]:
        """The findings newly recorded for `memory_id` (none when it is not an active memory,
        or everything found was recorded before)."""
        now = datetime.fromtimestamp(self.clock(), tz=UTC)
        memory = self.store.get(team, memory_id)
        if memory is None or not _detectable(memory):
            return []
        candidates = self._candidates(team, memory)
        if not candidates:
            return []
        cosines = self.similarity.similarities(_text(memory), [_text(c) for c in candidates])
        own_topic = topic(memory)
        duplicates: list[str] = []
        best = 0.0
        added: list[Finding] = []
        for candidate, cosine in zip(candidates, cosines, strict=True):
            if distinct_entities(memory.content, candidate.content):
                # About two different things: whatever the judge (a model, too) thinks of
                # the wording, one cannot contradict or duplicate the other.
                continue
            same_topic = own_topic is not None and topic(candidate) == own_topic
            if same_words(memory.content, candidate.content):
                # One text spelled two ways: a copy, whatever a judge (a model) would say.
                verdict = Verdict("duplicate", ("same_words",))
            else:
                verdict = self.judge_pair(memory.content, candidate.content, cosine, same_topic)
            verdict = subject_gate(verdict, memory.subject, candidate.subject)
            if verdict.kind == "duplicate":
                duplicates.append(candidate.id)
                best = max(best, cosine)
            elif verdict.kind == "conflict":
                members = sorted([memory.id, candidate.id])
                finding = Finding(
                    id=finding_id("conflict", members),
                    kind="conflict",
                    members=members,
                    detected_at=now,
                    topic=own_topic if same_topic else None,
                    similarity=round(cosine, 4),
                    signals=list(verdict.signals),
                )
                # Written with the finding, only if it is new: detecting it again (a
                # replayed stream record) adds nothing, so it is announced once.
                detected = self.events.event(
                    team,
                    Kind.MEMORY_CONFLICT_DETECTED,
                    CURATOR_ACTOR,
                    finding_id=finding.id,
                    memory_ids=finding.members,
                )
                if self.findings.add(team, finding, events=[detected]):
                    added.append(finding)
        if duplicates:
            members = sorted([memory.id, *duplicates])
            cluster = Finding(
                id=finding_id("duplicate", members),
                kind="duplicate",
                members=members,
                detected_at=now,
                topic=own_topic,
                similarity=round(best, 4),
            )
            if self.findings.add(team, cluster):
                added.append(cluster)
        return added

    def _candidates(self, team: str, memory: Memory) -> list[Memory]:
        chain = {memory.id, memory.supersedes, memory.superseded_by, *memory.merged_from}
        found: dict[str, Memory] = {}
        for candidate_id, _ in self.index.search(team, _text(memory), CANDIDATES + 1):
            if candidate_id in chain or candidate_id in found:
                continue
            candidate = self.store.get(team, candidate_id)
            if candidate is not None and _detectable(candidate):
                found[candidate.id] = candidate
        own_topic = topic(memory)
        if own_topic is not None:
            # Memories about the same subject (or key, or title), found through the index by the
            # topic's words rather than by reading the whole team: a scan per write made every
            # write O(team) (seconds per write at 100k memories, `cairn bench store`).
            for candidate_id, _ in self.index.search(team, own_topic, TOPIC_CANDIDATES):
                if candidate_id in chain or candidate_id in found:
                    continue
                candidate = self.store.get(team, candidate_id)
                if (
                    candidate is not None
                    and _detectable(candidate)
                    and topic(candidate) == own_topic
                ):
                    found[candidate.id] = candidate
        return [c for c in found.values() if memory.id not in c.merged_from]


# A detection that fails (the database busy, a model endpoint down) is tried again this many
# times in all, after these pauses, before it is given up with an error naming the memory.
DETECTION_ATTEMPTS: Final = 3
DETECTION_RETRY_PAUSES: Final = (0.2, 1.0)
# How long a stop waits for the memory in progress: the server's whole stop must fit in 10 s.
DETECTION_STOP_SECONDS: Final = 3.0


class BackgroundDetection:
    """`CurationQueue` for local mode: detection runs on a worker thread, off the request
    path (the local counterpart of the stream-fed curator). `drain` waits until it caught up;
    `stop` lets the memory in progress finish, abandons the rest (with a line saying how many:
    a stop is bounded, not as long as the backlog), then ends the thread. A failed detection is
    logged with the memory's id and the exception, and tried again (`DETECTION_ATTEMPTS` in
    all)."""

    _STOP: Final = ("", "")

    def __init__(
        self, detector: Detector, *, pauses: tuple[float, ...] = DETECTION_RETRY_PAUSES
    ) -> None:
        self._detector = detector
        self._pauses = pauses
        self._queue: queue.Queue[tuple[str, str]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()
        self._stopped = False
        self._stopping = threading.Event()

    def submit(self, team: str, memory_id: str) -> None:
        with self._guard:
            if self._stopped:
                return  # the process is closing its stores
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="cairn-detection", daemon=True
                )
                self._thread.start()
            self._queue.put((team, memory_id))

    def drain(self) -> None:
        """Block until every submitted memory has been examined."""
        self._queue.join()

    def stop(self, timeout: float = DETECTION_STOP_SECONDS) -> None:
        """Finish the memory in progress, abandon the rest, then end the worker (before the
        stores close)."""
        with self._guard:
            self._stopped = True
            thread = self._thread
            if thread is None or not thread.is_alive():
                return
            abandoned = 0
            while True:
                try:
                    self._queue.get_nowait()
                except queue.Empty:
                    break
                self._queue.task_done()
                abandoned += 1
            self._queue.put(self._STOP)
        self._stopping.set()  # no more pauses between attempts: one last try
        if abandoned:
            logger.warning(
                f"stopping: {abandoned} memory(ies) queued for duplicate and conflict detection "
                "left unexamined",
                extra={"abandoned": abandoned},
            )
        thread.join(timeout)
        if thread.is_alive():
            logger.error(f"the detection worker did not end within {timeout:g} s of the stop")

    def _run(self) -> None:
        while True:
            team, memory_id = self._queue.get()
            try:
                if (team, memory_id) == self._STOP:
                    return
                self._detect(team, memory_id)
            finally:
                self._queue.task_done()

    def _detect(self, team: str, memory_id: str) -> None:
        for attempt in range(1, DETECTION_ATTEMPTS + 1):
            try:
                self._detector.detect(team, memory_id)
                return
            except Exception as exc:  # a failed detection must not stop the worker
                last = attempt == DETECTION_ATTEMPTS or self._stopping.is_set()
                log = logger.error if last else logger.warning
                # The type and where it was raised, not its text: an exception's text may
                # quote the memory's content (as the AWS curator logs it).
                log(
                    f"detection of memory {memory_id} (team {team}) failed, attempt "
                    f"{attempt} of {DETECTION_ATTEMPTS}: {type(exc).__name__} at "
                    f"{raised_at(exc)}" + ("; given up" if last else "; trying again"),
                    extra={"memory_id": memory_id, "team": team, "error": type(exc).__name__},
                )
                if last:
                    return
                pauses = self._pauses or (0.0,)
                self._stopping.wait(pauses[min(attempt, len(pauses)) - 1])


def raised_at(exc: BaseException) -> str:
    """`module.py:line in function` of the frame that raised `exc` (no values, no text)."""
    trace = exc.__traceback__
    if trace is None:
        return "an unknown place"
    while trace.tb_next is not None:
        trace = trace.tb_next
    code = trace.tb_frame.f_code
    return f"{code.co_filename.rsplit('/', 1)[-1]}:{trace.tb_lineno} in {code.co_name}"
