"""`cairn bench embed`: CPU seconds to embed N SciFact texts, cairn beside torch.

cairn's MiniLM embeds the first N abstracts of a BEIR folder (title and text cut at 2,000
characters, as chunks are) in this process. With `--torch-python` (or `$CAIRN_BENCH_TORCH_PYTHON`),
the interpreter of a throwaway venv holding torch, numpy, safetensors and tokenizers
(`pip install torch==2.13.0 numpy safetensors tokenizers`: never a dependency of cairn) embeds
the same texts with the same verified weights and tokenizer in torch (`TORCH_SCRIPT`:
`F.scaled_dot_product_attention`, exact GELU, batches by length), and the two take turns,
`--rounds` times, so both see the same machine. CPU time (`time.process_time`, model load
excluded) is the figure: on a shared machine wall time measures the neighbours. Both run once
on one thread and once on every core. One JSON object on stdout: each side's CPU seconds per
round and the max |difference| between their vectors.

`--write-reference FILE` instead has torch embed a few texts, each alone (no padding), and
writes them as the JSON fixture that tests/unit/search/test_embedding_reference.py holds
cairn's vectors to.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TORCH_PYTHON_ENV = "CAIRN_BENCH_TORCH_PYTHON"
DEFAULT_DATA = Path("../shared/bench/scifact")

# Run by the torch venv's interpreter (`python -c`): argv[1] is a JSON request
# {model_dir, texts_file, out_file, threads, batch}; prints {"cpu_s", "wall_s", "threads"}.
TORCH_SCRIPT = r"""
import json, sys, time
import numpy as np, torch, torch.nn.functional as F
from safetensors.numpy import load_file
from tokenizers import Tokenizer

req = json.loads(sys.argv[1])
if req["threads"]:
    torch.set_num_threads(req["threads"])
config = json.load(open(req["model_dir"] + "/config.json"))
w = {k.removeprefix("bert."): torch.from_numpy(v.copy())
     for k, v in load_file(req["model_dir"] + "/model.safetensors").items()}
tok = Tokenizer.from_file(req["model_dir"] + "/tokenizer.json")
tok.no_padding()
tok.enable_truncation(max_length=256)
size, heads = config["hidden_size"], config["num_attention_heads"]
eps = config.get("layer_norm_eps", 1e-12)

def forward(ids, mask):
    b, n = ids.shape
    x = (w["embeddings.word_embeddings.weight"][ids]
         + w["embeddings.position_embeddings.weight"][:n][None]
         + w["embeddings.token_type_embeddings.weight"][0][None, None])
    x = F.layer_norm(
        x, (size,), w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    bias = (1.0 - mask.float())[:, None, None, :] * torch.finfo(torch.float32).min
    for layer in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."
        def split(name):
            y = F.linear(x, w[p + name + ".weight"], w[p + name + ".bias"])
            return y.view(b, n, heads, size // heads).transpose(1, 2)
        q, k, v = (split("attention.self." + s) for s in ("query", "key", "value"))
        ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        ctx = ctx.transpose(1, 2).reshape(b, n, size)
        a = F.linear(
            ctx, w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"])
        x = F.layer_norm(a + x, (size,), w[p + "attention.output.LayerNorm.weight"],
                         w[p + "attention.output.LayerNorm.bias"], eps)
        h = F.gelu(
            F.linear(x, w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"]))
        o = F.linear(h, w[p + "output.dense.weight"], w[p + "output.dense.bias"])
        x = F.layer_norm(
            o + x, (size,), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
    m = mask.float()[:, :, None]
    return F.normalize((x * m).sum(1) / m.sum(1).clamp(min=1e-9), p=2, dim=1)

def embed(texts, batch):
    ids = [e.ids for e in tok.encode_batch(texts)]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out = np.zeros((len(texts), size), dtype=np.float32)
    with torch.inference_mode():
        for start in range(0, len(order), batch):
            chosen = order[start:start + batch]
            width = max(len(ids[i]) for i in chosen)
            t = torch.zeros((len(chosen), width), dtype=torch.long)
            m = torch.zeros((len(chosen), width), dtype=torch.long)
            for row, i in enumerate(chosen):
                t[row, :len(ids[i])] = torch.tensor(ids[i])
                m[row, :len(ids[i])] = 1
            out[chosen] = forward(t, m).numpy()
    return out

texts = json.load(open(req["texts_file"]))
embed(texts[:2], req["batch"])  # warm: first calls allocate
cpu, wall = time.process_time(), time.perf_counter()
vectors = embed(texts, req["batch"])
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
np.save(req["out_file"], vectors)
print(json.dumps({"cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
                  "threads": torch.get_num_threads(), "torch": torch.__version__}))
"""


def scifact_texts(data_dir: Path, count: int) -> list[str]:
    """The first `count` records as chunks hold them: title, blank line, text; 2,000 chars."""
    texts: list[str] = []
    with (data_dir / "corpus.jsonl").open() as f:
        for line in f:
            if len(texts) == count:
                break
            if line.strip():
                record = json.loads(line)
                texts.append(f"{record.get('title') or ''}\n\n{record.get('text') or ''}"[:2000])
    return texts


def _torch_round(
    python: str, model_dir: Path, texts_file: Path, scratch: Path, threads: int, batch: int
) -> tuple[dict[str, Any], Any]:
    import numpy as np

    out_file = scratch / "torch.npy"
    request = {
        "model_dir": str(model_dir),
        "texts_file": str(texts_file),
        "out_file": str(out_file),
        "threads": threads,
        "batch": batch,
    }
    command = [python, "-c", TORCH_SCRIPT, json.dumps(request)]
    pipe = subprocess.PIPE
    # The operator's own torch interpreter, given by path.
    with subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=pipe, stderr=pipe) as child:  # noqa: S603
        stdout, stderr = child.communicate()
    if child.returncode != 0:
        raise RuntimeError(f"the torch side failed: {stderr.decode()[-2000:]}")
    return json.loads(stdout.decode().strip().splitlines()[-1]), np.load(out_file)


def _cairn_round(embedder: Any, texts: list[str]) -> tuple[dict[str, Any], Any]:
    cpu, wall = time.process_time(), time.perf_counter()
    vectors = embedder.embed(texts)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"cpu_s": round(cpu, 2), "wall_s": round(wall, 2)}, vectors


def run(
    texts: list[str],
    *,
    rounds: int = 2,
    torch_python: str | None = None,
    backend: str = "auto",
    torch_batch: int = 32,
) -> dict[str, Any]:
    """Each side's CPU seconds per round, on one thread and on every core."""
    from shared.search.embedding.minilm import MiniLMEmbedder, default_model_dir

    cores = os.cpu_count() or 1
    result: dict[str, Any] = {
        "texts": len(texts),
        "cores": cores,
        "load_average_before": round(os.getloadavg()[0], 2),
    }
    with tempfile.TemporaryDirectory(prefix="cairn-bench-embed-") as folder:
        scratch = Path(folder)
        texts_file = scratch / "texts.json"
        texts_file.write_text(json.dumps(texts))
        for label, threads in (("1_thread", 1), ("all_cores", cores)):
            embedder = MiniLMEmbedder(workers=threads, backend=backend)  # type: ignore[arg-type]
            embedder.embed(texts[:2])  # load and verify the weights outside the clock
            figures: dict[str, Any] = {"cairn_backend": embedder.backend, "cairn": []}
            for _ in range(rounds):
                cairn, ours = _cairn_round(embedder, texts)
                figures["cairn"].append(cairn)
                if torch_python:
                    torch, theirs = _torch_round(
                        torch_python, default_model_dir(), texts_file, scratch, threads, torch_batch
                    )
                    figures.setdefault("torch", []).append(torch)
                    figures["max_abs_difference"] = float(abs(ours - theirs).max())
            best = min(r["cpu_s"] for r in figures["cairn"])
            figures["cairn_best_cpu_s"] = best
            if torch_python:
                torch_best = min(r["cpu_s"] for r in figures["torch"])
                figures["torch_best_cpu_s"] = torch_best
                figures["cairn_over_torch"] = round(best / torch_best, 3)
            result[label] = figures
    result["load_average_after"] = round(os.getloadavg()[0], 2)
    return result


def write_reference(torch_python: str, texts: list[str], target: Path) -> None:
    """torch's vectors for `texts`, each embedded alone, as the test fixture at `target`."""
    from shared.search.embedding.minilm import MODEL_ID, default_model_dir

    rows = []
    with tempfile.TemporaryDirectory(prefix="cairn-reference-") as folder:
        scratch = Path(folder)
        version = ""
        for text in texts:
            texts_file = scratch / "texts.json"
            texts_file.write_text(json.dumps([text]))
            info, vectors = _torch_round(
                torch_python, default_model_dir(), texts_file, scratch, 1, 1
            )
            version = info["torch"]
            rows.append({"text": text, "vector": [float(f"{x:.9g}") for x in vectors[0]]})
    header = {
        "model": MODEL_ID,
        "produced_by": (
            f"cairn bench embed --write-reference: torch {version} on the CPU, one thread, "
            "float32, each text alone (no padding), exact-erf GELU, mean pooling and L2 "
            "normalisation, from the same verified weights and tokenizer"
        ),
    }
    # One text per line: a re-recorded fixture diffs line by line.
    lines = ",\n".join(json.dumps(row, ensure_ascii=False) for row in rows)
    target.write_text(json.dumps(header, indent=1)[:-2] + f',\n "texts": [\n{lines}\n]\n}}\n')


def main(argv: Sequence[str] | None = None) -> int:
    """`cairn bench embed [--data DIR] [--texts N] [--rounds N] [--torch-python PATH]`."""
    parser = argparse.ArgumentParser(prog="cairn bench embed", description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a BEIR folder")
    parser.add_argument("--texts", type=int, default=300, help="texts to embed (default 300)")
    parser.add_argument("--rounds", type=int, default=2, help="turns each side takes")
    parser.add_argument(
        "--torch-python",
        default=os.environ.get(TORCH_PYTHON_ENV),
        help=f"a torch venv's python (default ${TORCH_PYTHON_ENV}); cairn alone without it",
    )
    parser.add_argument("--torch-batch", type=int, default=32, help="torch's batch (default 32)")
    parser.add_argument(
        "--backend", choices=("auto", "onnxruntime", "numpy"), default="auto", help="cairn's"
    )
    parser.add_argument("--write-reference", type=Path, help="write torch's fixture here instead")
    args = parser.parse_args(argv)
    if args.texts < 1 or args.rounds < 1:
        parser.error("--texts and --rounds must be at least 1")
    if args.write_reference:
        if not args.torch_python:
            parser.error(f"--write-reference needs --torch-python or ${TORCH_PYTHON_ENV}")
        write_reference(args.torch_python, REFERENCE_TEXTS, args.write_reference)
        return 0
    texts = scifact_texts(args.data, args.texts)
    print(
        json.dumps(
            run(
                texts,
                rounds=args.rounds,
                torch_python=args.torch_python,
                backend=args.backend,
                torch_batch=args.torch_batch,
            )
        )
    )
    return 0


# The fixture's texts: short and long (past the 256-token cut), punctuation, digits, accents,
# a query pair and a passage of the kind cairn indexes.
REFERENCE_TEXTS = [
    "A man is eating food.",
    "how does reciprocal rank fusion work",
    "Reciprocal rank fusion adds one over k plus rank across rankings; BM25 weighs rare words.",
    "Café déjà vu: naïve façade, 42 € — «quoted» text & symbols (1/2, 3.14, x²).",
    "Deploy freeze: no production deploys from Friday 17:00 UTC until Monday 09:00 UTC. "
    "Rollbacks are allowed; page the on-call if a rollback fails twice.",
    " ".join(["The embedded index keeps BM25 and vector search in one SQLite file per team."] * 40),
]
