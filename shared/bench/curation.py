"""`cairn bench curation`: precision and recall of the curator's conflict and duplicate
detection on a labelled set of memory pairs.

The set (`tests/bench/memory_pairs.jsonl`) holds pairs labelled `conflict`, `duplicate` or
`unrelated` (about a third of the unrelated ones share a subject but do not contradict), each
marked `train` or `test`; a pair with a `subject` is judged as two memories about the same
subject, one with `subjects` (two) as two memories whose explicit subject fields are those.
Each pair is embedded with the local embedder (all-MiniLM-L6-v2, the one the local curator
uses) and judged by `shared.memory.detection.judge` with the shipped thresholds.

- `--fit` grid-searches the three thresholds on the **train** part only and prints the best
  (the shipped constants were copied from such a run); the test part is never looked at then.
- The figures to read are the **test** part's: the thresholds never saw it. Train is printed
  beside it to show the fit.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from shared.memory.curator import DUPLICATE_SIMILARITY
from shared.memory.detection import Thresholds, judge, same_claims, same_words, subject_gate

PAIRS_PATH = Path(__file__).resolve().parents[2] / "tests" / "bench" / "memory_pairs.jsonl"
KINDS = ("conflict", "duplicate")


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    label: str
    split: str
    same_topic: bool
    # The two memories' explicit `subject` fields, where the pair gives them apart.
    subjects: tuple[str, str] | None = None
    # `spelling`: one text written two ways (case, punctuation, separators), held out.
    variant: str | None = None


def load_pairs(path: Path = PAIRS_PATH) -> list[Pair]:
    pairs = []
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            subjects = tuple(row["subjects"]) if "subjects" in row else None
            same = "subject" in row or (subjects is not None and subjects[0] == subjects[1])
            pairs.append(
                Pair(
                    row["a"],
                    row["b"],
                    row["label"],
                    row["split"],
                    same,
                    (subjects[0], subjects[1]) if subjects else None,
                    row.get("variant"),
                )
            )
    return pairs


def cosines(pairs: Sequence[Pair]) -> list[float]:
    """Cosine of each pair's two texts under the local embedder (unit vectors: a dot)."""
    from shared.search.embedding.minilm import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    texts = [t for p in pairs for t in (p.a, p.b)]
    vectors = embedder.embed(texts)
    return [float(vectors[2 * i] @ vectors[2 * i + 1]) for i in range(len(pairs))]


def scores(
    pairs: Sequence[Pair], sims: Sequence[float], thresholds: Thresholds
) -> dict[str, dict[str, float]]:
    """Per kind: precision, recall, F1 and the counts behind them."""
    predicted = [
        subject_gate(
            judge(p.a, p.b, s, p.same_topic, thresholds), *(p.subjects or (None, None))
        ).kind
        or "unrelated"
        for p, s in zip(pairs, sims, strict=True)
    ]
    out: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        tp = sum(1 for p, y in zip(pairs, predicted, strict=True) if y == kind == p.label)
        fp = sum(1 for p, y in zip(pairs, predicted, strict=True) if y == kind != p.label)
        fn = sum(1 for p, y in zip(pairs, predicted, strict=True) if p.label == kind != y)
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        out[kind] = {
            "precision": round(precision, 3),
            "recall": round(recall, 3),
            "f1": round(f1, 3),
            "tp": tp,
            "fp": fp,
            "fn": fn,
            "labelled": sum(1 for p in pairs if p.label == kind),
        }
    return out


def merge_rule(p: Pair, cosine: float) -> bool:
    """The curator's merge as shipped: alike enough and saying the same thing."""
    return cosine >= DUPLICATE_SIMILARITY and same_claims(p.a, p.b)


def merge_scores(pairs: Sequence[Pair], sims: Sequence[float]) -> dict[str, dict[str, float]]:
    """The curator's merge (it deletes the newer memory), graded against the `duplicate`
    labels: by cosine alone, and as shipped (cosine and `same_claims`)."""
    out: dict[str, dict[str, float]] = {}
    rules: dict[str, Callable[[Pair, float], bool]] = {
        "cosine_only": lambda p, s: s >= DUPLICATE_SIMILARITY,
        "shipped": merge_rule,
    }
    for name, rule in rules.items():
        merged = [same_words(p.a, p.b) or rule(p, s) for p, s in zip(pairs, sims, strict=True)]
        tp = sum(1 for p, m in zip(pairs, merged, strict=True) if m and p.label == "duplicate")
        fp = sum(1 for p, m in zip(pairs, merged, strict=True) if m and p.label != "duplicate")
        labelled = sum(1 for p in pairs if p.label == "duplicate")
        out[name] = {
            "precision": round(tp / (tp + fp), 3) if tp + fp else 0.0,
            "recall": round(tp / labelled, 3) if labelled else 0.0,
            "merged": tp + fp,
            "wrongly_merged": fp,
        }
    return out


def fit(pairs: Sequence[Pair], sims: Sequence[float]) -> tuple[Thresholds, float]:
    """The thresholds with the best mean F1 of conflict and duplicate on `pairs`."""
    grid = [round(0.4 + 0.025 * i, 3) for i in range(24)]  # 0.400 .. 0.975
    best: tuple[float, Thresholds] = (-1.0, Thresholds())
    for duplicate in grid:
        for conflict in grid:
            for value in grid:
                candidate = Thresholds(duplicate=duplicate, conflict=conflict, value=value)
                result = scores(pairs, sims, candidate)
                mean_f1 = (result["conflict"]["f1"] + result["duplicate"]["f1"]) / 2
                if mean_f1 > best[0]:
                    best = (mean_f1, candidate)
    return best[1], best[0]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cairn bench curation", description=__doc__)
    parser.add_argument("--pairs", type=Path, default=PAIRS_PATH, help="labelled pairs (JSONL)")
    parser.add_argument(
        "--fit", action="store_true", help="grid-search the thresholds on the train part only"
    )
    args = parser.parse_args(argv)
    pairs = load_pairs(args.pairs)
    started = time.perf_counter()
    sims = cosines(pairs)
    embedded = time.perf_counter() - started
    parts = {
        split: [(p, s) for p, s in zip(pairs, sims, strict=True) if p.split == split]
        for split in ("train", "test")
    }
    report: dict[str, object] = {
        "pairs": len(pairs),
        "by_split": {k: len(v) for k, v in parts.items()},
        "embedding_seconds": round(embedded, 2),
        "thresholds": Thresholds().__dict__,
    }
    if args.fit:
        train = parts["train"]
        fitted, mean_f1 = fit([p for p, _ in train], [s for _, s in train])
        report["fitted_on_train"] = {"thresholds": fitted.__dict__, "mean_f1": round(mean_f1, 3)}
    for split, rows in parts.items():
        report[split] = scores([p for p, _ in rows], [s for _, s in rows], Thresholds())
        report[f"{split}_curator_merge"] = merge_scores([p for p, _ in rows], [s for _, s in rows])
    spelled = [(p, s) for p, s in parts["test"] if p.variant == "spelling"]
    verdicts = [
        subject_gate(judge(p.a, p.b, s, p.same_topic), *(p.subjects or (None, None))).kind
        or "unrelated"
        for p, s in spelled
    ]
    report["test_spelling_variants"] = {
        "pairs": len(spelled),
        "judged_duplicate": verdicts.count("duplicate"),
        "judged_conflict": verdicts.count("conflict"),
        "merged_by_curator": sum(1 for p, s in spelled if same_words(p.a, p.b) or merge_rule(p, s)),
    }
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    test = report["test"]
    assert isinstance(test, dict)
    spelling = report["test_spelling_variants"]
    assert isinstance(spelling, dict)
    sys.stderr.write(
        "held-out spelling variants (case, punctuation, separators): {pairs} pairs, "
        "{judged_duplicate} duplicates, {judged_conflict} conflicts\n".format(**spelling)
    )
    sys.stderr.write(
        "held-out: conflict precision {c[precision]} recall {c[recall]} · duplicate precision "
        "{d[precision]} recall {d[recall]}\n".format(c=test["conflict"], d=test["duplicate"])
    )
    merge = report["test_curator_merge"]
    assert isinstance(merge, dict)
    sys.stderr.write(
        "held-out curator merge: precision {m[precision]} recall {m[recall]} "
        "({m[wrongly_merged]} wrongly merged; cosine alone: {c[wrongly_merged]})\n".format(
            m=merge["shipped"], c=merge["cosine_only"]
        )
    )
    return 0
