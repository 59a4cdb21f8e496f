"""Per-function bundles: each carries exactly the packages its handler imports (measured in a
fresh interpreter), and bytecode compiled for the runtime's Python."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from infra.bundling import (
    BUNDLE_RUNTIME,
    FUNCTION_PACKAGES,
    LOCAL_ONLY_PACKAGES,
    RUNTIME_ENVIRONMENT,
    UNUSED_DEPENDENCIES,
    Bundles,
    build,
    build_python,
    bundle_packages,
    generate_catalog,
    requirement_name,
    requirements,
)
from infra.imports import Imports, functions, measure
from tests.infra.support import Synth

# Imported when installed, skipped when not (try/except ImportError in the importer): anyio
# (sniffio), starlette (python-multipart, for forms cairn does not take), urllib3 (PySocks).
OPTIONAL_IMPORTS = frozenset({"sniffio", "python-multipart", "pysocks"})
# opensearch-py declares these for a gRPC transport cairn never uses.
NEVER_SHIPPED = frozenset({"grpcio", "protobuf", "opensearch-protobufs"})
# Packages none of the gateway's code paths import (the groups' engines and schedules).
NOT_IN_THE_GATEWAY = frozenset({"numpy", "opensearch-py", "cronsim", "requests"})


@pytest.fixture(scope="module")
def exported() -> frozenset[str]:
    """The Lambda runtime dependencies the lock exports (local-only ones pruned)."""
    return frozenset(filter(None, map(requirement_name, requirements().splitlines())))


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Imports]:
    """What every handler imports, each in a fresh interpreter (two at a time: 2 cores); the
    gateway with the generated tool catalog its bundle carries."""
    catalog = tmp_path_factory.mktemp("catalog") / "catalog.json"
    generate_catalog(catalog)
    names = functions()
    with ThreadPoolExecutor(max_workers=2) as pool:
        imports = pool.map(lambda name: measure(name, catalog=catalog), names)
        return dict(zip(names, imports, strict=True))


def test_every_function_has_a_bundle_entry() -> None:
    assert set(FUNCTION_PACKAGES) == set(functions())


@pytest.mark.parametrize("function", sorted(FUNCTION_PACKAGES))
def test_a_bundle_carries_exactly_what_its_handler_imports(
    function: str, measured: dict[str, Imports], exported: frozenset[str]
) -> None:
    imports = measured[function]
    needed = imports.all & exported
    assert FUNCTION_PACKAGES[function] == needed, (
        f"set FUNCTION_PACKAGES[{function!r}] to {sorted(needed)}: "
        f"missing {sorted(needed - FUNCTION_PACKAGES[function])}, "
        f"never imported {sorted(FUNCTION_PACKAGES[function] - needed)}"
    )
    # What the bundle leaves out may only be imported where a guard lets it be absent, and no
    # local-only package loads at init.
    assert imports.all - exported <= OPTIONAL_IMPORTS | set(LOCAL_ONLY_PACKAGES)
    assert imports.at_init - exported <= OPTIONAL_IMPORTS


def test_only_the_snapshotted_gateway_loads_the_xray_sdk_at_init(
    measured: dict[str, Imports],
) -> None:
    # The others load it at their first sampled invocation (shared.observability.SampledTracer),
    # so every bundle still carries it.
    for function, imports in measured.items():
        assert ("aws-xray-sdk" in imports.at_init) == (function == "gateway"), function
        assert "aws-xray-sdk" in imports.all, function


def test_no_bundle_carries_the_unused_grpc_stack() -> None:
    assert UNUSED_DEPENDENCIES == NEVER_SHIPPED
    for packages in FUNCTION_PACKAGES.values():
        assert not bundle_packages(packages) & NEVER_SHIPPED
    # ... though the search groups carry opensearch-py, which declares it.
    assert "opensearch-py" in bundle_packages(FUNCTION_PACKAGES["search"])


def test_the_gateway_carries_no_group_engine() -> None:
    assert not bundle_packages(FUNCTION_PACKAGES["gateway"]) & NOT_IN_THE_GATEWAY


def test_functions_with_the_same_packages_share_one_asset() -> None:
    bundles = Bundles(bundle=True)
    assert bundles.code("memory") is bundles.code("search")
    assert bundles.code("gateway") is not bundles.code("memory")
    assert bundles.code("handoffs") is not bundles.code("memory")


def test_every_bundled_function_runs_the_bundle_runtime(dev: Synth) -> None:
    for function, logical_id in dev.functions().items():
        properties = dev.resources[logical_id]["Properties"]
        assert properties["Runtime"] == BUNDLE_RUNTIME.name, function
        # ... and starts without pydantic's plugin scan, as the measurements assume.
        variables = properties["Environment"]["Variables"]
        assert variables["PYDANTIC_DISABLE_PLUGINS"] == "__all__", function
    assert RUNTIME_ENVIRONMENT == {"PYDANTIC_DISABLE_PLUGINS": "__all__"}


_PROBE = (
    "import importlib.util, sys; "
    "print(importlib.util.MAGIC_NUMBER.hex(), sys.implementation.cache_tag)"
)


def _magic_and_tag_of(python: str) -> tuple[bytes, str]:
    """`importlib.util.MAGIC_NUMBER` and the cache tag (cpython-313) of `python`."""
    out = subprocess.run(
        [python, "-c", _PROBE], capture_output=True, text=True, check=True
    ).stdout.split()
    return bytes.fromhex(out[0]), out[1]


def test_bundle_bytecode_is_compiled_for_the_runtime_python(
    dev: Synth, tmp_path_factory: pytest.TempPathFactory
) -> None:
    out: Path = tmp_path_factory.mktemp("bundle")
    build(out, FUNCTION_PACKAGES["handoffs"])
    # The interpreter of the version the template's functions run (python3.X), found apart
    # from the build's own choice.
    runtimes = {
        dev.resources[logical_id]["Properties"]["Runtime"]
        for logical_id in dev.functions().values()
    }
    assert len(runtimes) == 1
    runtime_python = build_python(runtimes.pop().removeprefix("python"))
    magic, tag = _magic_and_tag_of(runtime_python)

    sources = sorted(out.rglob("*.py"))
    assert len(sources) > 500
    for source in sources:
        compiled = source.parent / "__pycache__" / f"{source.stem}.{tag}.pyc"
        header = compiled.read_bytes()[:8]
        assert header[:4] == magic, compiled
        # Flags 0b01: hash-based and unchecked, valid whatever the zip does to file times.
        assert int.from_bytes(header[4:8], "little") == 1, compiled
    # What the handler needs is there; what no function imports is not.
    assert (out / "functions" / "handoffs" / "handler.py").is_file()
    assert (out / "pydantic_core").is_dir()
    assert not (out / "grpc").exists()
    assert not (out / "numpy").exists()
    assert not list(out.glob("*/**/tests"))
