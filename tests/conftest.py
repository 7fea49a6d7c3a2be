"""Shared fixtures: isolated copies of the workflow for end-to-end runs.

A workflow test must not touch the checkout's own ``results/`` (other runs may be using it), so
:func:`workflow_copy` copies the Snakefile, ``workflow/``, ``config/``, ``profiles/`` and ``envs/`` (which the
rules' ``conda:`` directives name) into a temporary directory and :func:`run_snakemake` runs Snakemake there (the
package itself is imported from the installed, editable ``hsaudit``, or from a frozen copy: :func:`copy_workflow`).

Smoke builds that several tests assert on are made once per session (:func:`fig3_built`, :func:`housing_built`); a test that only reads
one takes it as it is, a test that edits or reruns it takes a copy (:func:`copy_built`), never a rebuild. Under
pytest-xdist the tests of one build share an ``xdist_group`` so that ``--dist loadgroup`` runs them on one worker,
which builds it once.
"""

from __future__ import annotations

import os

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Under pytest-xdist every core runs a worker: intra-op threads of torch and BLAS would only oversubscribe the
    # cores (and their barriers stall when they are shared). Set before numpy or torch is first imported.
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, "1")
import importlib.util
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
# tests/newcomer/toy/ is no test directory: it holds the files a newcomer's toy paper adds, at their paths in the
# repository, which tests/test_newcomer.py copies into a copy of the repository (its test file among them). Ignored
# here: a conftest.py of its own would be imported as `conftest` too and shadow this one (`from conftest import ...`).
collect_ignore_glob = ["newcomer/toy/*"]
_COPIED = ("Snakefile", "workflow", "config", "profiles", "envs", "examples")  # examples: the byo section's shipped entry


# Under pytest-xdist (`-n auto`; pyproject.toml sets --dist loadgroup), the long workflow tests go out first, longest
# first (by `--durations`), so that the short ones fill in around them: these xdist groups, in this order, then
# everything else in collection order.
FIRST = (
    "housing",  # the Housing build, its end-to-end, estimator-edit and one-run tests, the CIFAR-10 targets on it
    "tests/workflow/test_workflow_yoon.py",
    "fig3",  # the fig3 build, its rerun tests and every README command
    "tests/workflow/test_slurm.py",
    "tests/workflow/test_workflow_steinke_annamalai.py",
    "tests/workflow/test_workflow_steinke_fig2.py",
    "tests/workflow/test_workflow_steinke_table1.py",
    "tests/experiments/byo/test_byo_workflow.py",
    "tests/experiments/byo/test_byo_few_workflow.py",
    "tests/experiments/libraries/test_libraries_workflow.py",
    "tests/test_newcomer.py",
    "tests/test_newcomer.py::a paper",  # its fifth-paper case, an xdist group of its own
)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups
def pytest_collection_modifyitems(config, items):
    """Each test module is one xdist group (its module fixtures are made once, on one worker) unless its tests
    name a group of their own (a session build shared across modules, e.g. ``fig3``); under xdist the groups of
    :data:`FIRST` are handed out first."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        rank = {group: i for i, group in enumerate(FIRST)}
        items.sort(key=lambda item: rank.get(_group(item), len(FIRST)))


def _group(item) -> str:
    mark = item.get_closest_marker("xdist_group")
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` imported as the module ``name`` (a script is no package module; its tests call its
    functions and ``main``)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look their module up here
    spec.loader.exec_module(module)
    return module


def snakemake_exe() -> str:
    """The Snakemake command: Snakemake itself and its Python script jobs are forks of this process's warm server
    (:func:`warm_server`), or plain ``snakemake`` with ``HSAUDIT_TEST_WARM=0``."""
    sock = warm_server()
    if sock:
        return str(Path(sock).with_name("snakemake"))
    exe = Path(sys.executable).with_name("snakemake")
    return str(exe) if exe.exists() else "snakemake"


_WARM: dict = {}


def warm_server() -> str | None:
    """Start, once per test process, a warm job server (:mod:`hsaudit.pipeline.warm`) and name it in
    ``HSAUDIT_WARM_SOCKET``, which every Snakemake run started from here inherits: Snakemake (through the ``snakemake``
    shim beside the socket) and each of its Python script jobs are then forks of a process that has Snakemake, torch,
    numpy, pandas and matplotlib imported (≈ 1.5 s of CPU saved per Snakemake call and 1–3 s per job, hundreds of
    each per suite). ``HSAUDIT_TEST_WARM=0`` runs everything cold, as Snakemake does by default. A server found dead
    is started again at the same socket, with a warning that carries the end of its log (a dead server would
    otherwise leave every later job cold without a word). The socket's path."""
    from hsaudit.pipeline import warm

    if os.environ.get("HSAUDIT_TEST_WARM", "1") == "0":
        return None
    if _WARM and _WARM["proc"].poll() is None:
        return _WARM["sock"]
    import atexit
    import tempfile
    import time
    import warnings

    if _WARM:  # it died: say so, with its log, and start another
        log = (_WARM["folder"] / "server.log").read_text(errors="replace")[-2000:]
        warnings.warn(f"the warm job server died (exit {_WARM['proc'].returncode}); started again. Its log:\n{log}")
        folder = _WARM["folder"]
    else:
        folder = Path(tempfile.mkdtemp(prefix="hsw"))
        shim = folder / "snakemake"  # `snakemake ARGS` as a client of the server (hsaudit.pipeline.warm.client)
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -I -S "{warm.__file__}" snakemake "$@"\n')
        shim.chmod(0o755)

        def stop() -> None:
            proc = _WARM["proc"]
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
            shutil.rmtree(folder, ignore_errors=True)

        atexit.register(stop)
    sock, ready = folder / "s", folder / "ready"
    ready.unlink(missing_ok=True)
    with open(folder / "server.log", "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "hsaudit.pipeline.warm", "serve", str(sock), str(ready)],
                                stdout=log, stderr=log, start_new_session=True)  # fmt: skip
    _WARM.update(proc=proc, folder=folder, sock=str(sock))
    deadline = time.monotonic() + 120
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the warm job server did not start (exit {proc.poll()}); HSAUDIT_TEST_WARM=0 skips it")
        time.sleep(0.05)
    os.environ[warm.SOCKET_ENV] = str(sock)
    return str(sock)


def run_snakemake(
    workdir: Path, *args: str, check: bool = True, timeout: float = 600, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run ``snakemake ARGS`` in ``workdir`` (with ``env`` over the environment); on failure with ``check`` the
    output is shown in the assertion."""
    exe = snakemake_exe()  # first: it names the warm server in os.environ
    env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    proc = subprocess.run(
        [exe, "--cores", "2", *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def job_counts(output: str) -> dict[str, int]:
    """The `Job stats` table of a Snakemake dry run as {rule: count} ({} when there is nothing to do)."""
    counts = {}
    block = output.split("Job stats:", 1)[1] if "Job stats:" in output else ""
    for line in block.splitlines():
        match = re.match(r"^(\w+)\s+(\d+)$", line.strip())
        if match and match.group(1) != "total":
            counts[match.group(1)] = int(match.group(2))
    return counts


def copy_workflow(dest: Path, *, package: bool = False) -> Path:
    """Copy the workflow's files (no results) into ``dest``. With ``package``, also a frozen copy of the package
    under ``dest/_pkg`` (run Snakemake with ``env=package_env(dest)``), so that the test can edit the package, and
    edits to the checkout while it runs cannot change a job's code version."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in _COPIED:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            shutil.copy2(src, dest / name)
    if package:
        from hsaudit.pipeline.provenance import package_dir

        # The byte-code comes along (copy2 keeps the sources' mtimes, which validate it): each job would otherwise
        # compile every module it imports where PYTHONDONTWRITEBYTECODE is set; an edited module is compiled afresh.
        shutil.copytree(package_dir(), dest / "_pkg" / "hsaudit")
    return dest


def package_env(workdir: Path) -> dict[str, str]:
    """The environment that imports the package from ``workdir``'s frozen copy (:func:`copy_workflow`)."""
    return {"PYTHONPATH": str(workdir / "_pkg")}


def copy_built(built: Path, dest: Path) -> Path:
    """A copy of a built workflow (timestamps and Snakemake's records kept, so nothing reruns), for a test that
    edits or reruns it; its frozen package copy comes along (run it with ``env=package_env(dest)``)."""
    shutil.copytree(built, dest, symlinks=True)
    return dest


def set_scale(workdir: Path, scale: str = "smoke") -> None:
    """Set ``scale:`` in the copy's config/config.yaml (the commands then run as written, without --config)."""
    path = workdir / "config" / "config.yaml"
    config = yaml.safe_load(path.read_text())
    config["scale"] = scale
    path.write_text(yaml.safe_dump(config, sort_keys=False))


@pytest.fixture
def workflow_copy(tmp_path: Path) -> Path:
    """A fresh copy of the workflow (no results) in a temporary directory."""
    return copy_workflow(tmp_path)


#: The paper-scale targets whose dry runs the workflow tests read (CIFAR-10 of Cebere et al., Yoon et al., Steinke et
#: al. fig2/fig4/table2/fig4_spread, Housing fig1c): one Snakemake dry run of them all (:func:`paper_dry_run`) instead
#: of one per test; each test reads its targets' part (:meth:`DryRun.of`).
PAPER_DRY_RUN_TARGETS = (
    *(f"results/{f}.pdf" for f in ("fig1", "fig2", "fig5", "fig6a", "fig8", "fig11", "fig12", "fig13")),
    "results/table2.md",
    *(f"results/yoon/{f}.pdf" for f in ("fig2", "fig3", "fig4", "fig5", "fig6", "fig7", "fig8")),
    "results/yoon/table1.md",
    *(f"results/steinke/{f}" for f in ("fig2.pdf", "fig4.pdf", "table2.md", "fig4_spread.pdf")),
    "results/fig1c.pdf",
)


class DryRun:
    """A Snakemake dry run's output, read per target."""

    def __init__(self, stdout: str) -> None:
        self.stdout = stdout
        # one job each: `rule NAME:` up to the next job's timestamp line (the last one up to the closing Job stats)
        jobs = re.split(r"\n(?=(?:local)?rule \w+:)", stdout.rsplit("\nJob stats:", 1)[0])[1:]
        # (less the lines about other jobs between them: timestamps, temporary files a finished job would remove)
        self.blocks = [re.sub(r"\n(?:\[[^\n]*\]|Would remove [^\n]*)(?=\n|$)", "", block.rstrip()) for block in jobs]

    @staticmethod
    def _files(block: str, field: str) -> list[str]:
        m = re.search(rf"^\s*{field}: (.*)$", block, re.MULTILINE)
        return m.group(1).split(", ") if m else []

    def of(self, *targets: str) -> str:
        """What ``snakemake -n TARGETS`` alone prints of its jobs: the blocks of the jobs that make ``targets`` and of
        every job they need (through the blocks' `input:` and `output:` files), in the run's order, after a `Job
        stats:` table of them (:func:`job_counts`)."""
        maker = {path: i for i, block in enumerate(self.blocks) for path in self._files(block, "output")}
        missing = [t for t in targets if t not in maker]
        assert not missing, f"no job of the dry run makes {missing} (PAPER_DRY_RUN_TARGETS)"
        seen = {maker[t] for t in targets}
        todo = list(seen)
        while todo:
            for path in self._files(self.blocks[todo.pop()], "input"):
                if (i := maker.get(path)) is not None and i not in seen:
                    seen.add(i)
                    todo.append(i)
        counts: dict[str, int] = {}
        for i in seen:
            name = re.match(r"(?:local)?rule (\w+):", self.blocks[i]).group(1)
            counts[name] = counts.get(name, 0) + 1
        stats = "".join(f"{rule} {n}\n" for rule, n in counts.items())
        return f"Job stats:\njob count\n{stats}total {len(seen)}\n\n" + "\n".join(self.blocks[i] for i in sorted(seen))


@pytest.fixture(scope="session")
def paper_dry_run(tmp_path_factory) -> DryRun:
    """``snakemake -n`` of every :data:`PAPER_DRY_RUN_TARGETS` at the config's scale (paper), once per session: the
    paper-scale DAG tests read their targets' jobs from it (:meth:`DryRun.of`). They are marked
    ``xdist_group("paper_dag")``."""
    work = copy_workflow(tmp_path_factory.mktemp("paper-dag"))
    return DryRun(run_snakemake(work, "-n", *PAPER_DRY_RUN_TARGETS).stdout)


FIG3 = "results/fig3.pdf"


@pytest.fixture(scope="session")
def fig3_built(tmp_path_factory) -> Path:
    """``snakemake results/fig3.pdf`` run once per session in a copy whose config says ``scale: smoke``, the package
    imported from its frozen copy. Read it as it is; edit or rerun only a :func:`copy_built` of it. Tests that use
    it are marked ``xdist_group("fig3")``."""
    work = copy_workflow(tmp_path_factory.mktemp("fig3-built"), package=True)
    set_scale(work)
    run_snakemake(work, FIG3, timeout=300, env=package_env(work))
    return work


@pytest.fixture
def torch_one_thread():
    """Run a torch test single-threaded: tiny tensors gain nothing from intra-op threads, and on a shared
    machine their barriers stall. Modules opt in with ``pytestmark = pytest.mark.usefixtures(...)``."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def housing_like(n: int = 200, seed: int = 0):
    """A small synthetic Housing-like task: 8 standard-normal features, a noisy linear binary label."""
    import numpy as np

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 8)).astype(np.float32)
    y = (X @ rng.standard_normal(8) + 0.5 * rng.standard_normal(n) > 0).astype(np.int64)
    return X, y


def check_pdf(path: Path) -> None:
    """A figure was written: a real PDF of some size, and no temporary file left beside it."""
    assert path.read_bytes()[:4] == b"%PDF" and path.stat().st_size > 5000
    assert not [p for p in path.parent.iterdir() if ".tmp" in p.name], "no temporary file left behind"


def images_like(n: int, shape: tuple[int, ...], seed: int = 0, classes: int = 10):
    """``n`` synthetic inputs of ``shape`` (standard normal, float32) and integer labels in [0, classes)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, *shape)).astype(np.float32), rng.integers(0, classes, n)


def check_footer_inside(fig) -> None:
    """The footer of ``fig`` (drawn by :func:`hsaudit.experiments.plotting.add_footer`) lies inside the figure, left,
    right and bottom edges included, and below every panel (with its labels) and every figure legend."""
    from hsaudit.experiments.plotting import FOOTER_GID

    renderer = fig.canvas.get_renderer()
    footers = [t for t in fig.texts if t.get_gid() == FOOTER_GID]
    assert len(footers) == 1, f"expected one footer, found {len(footers)}"
    box, page = footers[0].get_window_extent(renderer), fig.bbox
    assert page.x0 <= box.x0 and box.x1 <= page.x1, f"footer {box} runs off the sides of {page}"
    assert page.y0 <= box.y0 and box.y1 <= page.y1, f"footer {box} runs off the top or bottom of {page}"
    above = [ax.get_tightbbox(renderer) for ax in fig.axes if ax.get_visible() and ax.axison]
    above += [legend.get_window_extent(renderer) for legend in fig.legends]
    for other in above:
        assert other.y0 >= box.y1 - 0.5, f"{other} overlaps the footer {box}"


# ------------------------------------------------------------------ Housing-format data for the workflow tests


def synthetic_housing(n: int = 101, seed: int = 0) -> pd.DataFrame:
    """A Housing-format frame with plausible ranges (not the real data)."""
    from hsaudit.data.datasets import HOUSING_COLUMNS

    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "MedInc": rng.lognormal(1.2, 0.5, n),
            "HouseAge": rng.integers(1, 53, n).astype(float),
            "AveRooms": rng.lognormal(1.6, 0.3, n),
            "AveBedrms": rng.lognormal(0.05, 0.1, n),
            "Population": rng.integers(3, 5000, n).astype(float),
            "AveOccup": rng.lognormal(1.0, 0.3, n),
            "Latitude": rng.uniform(32.5, 42.0, n),
            "Longitude": rng.uniform(-124.3, -114.3, n),
            "MedHouseVal": rng.uniform(0.15, 5.0, n),
        }
    )
    return frame[list(HOUSING_COLUMNS)]


def write_synthetic_csv(path: Path, n: int = 240) -> None:
    synthetic_housing(n=n, seed=1).to_csv(path, index=False)


def configure_housing(workdir: Path, **smoke_housing) -> None:
    """Set the private copy's config: smoke scale, the synthetic file, and extra smoke overrides."""
    path = workdir / "config" / "config.yaml"
    config = yaml.safe_load(path.read_text())
    config["scale"] = "smoke"
    config["housing"]["data"]["path"] = "housing.csv"  # relative: a copy of a built tree keeps its audit keys
    for key, value in smoke_housing.items():
        if key == "figures":
            config["housing"]["figures"] = value
        else:
            config["scales"]["smoke"]["housing"][key] = value
    path.write_text(yaml.safe_dump(config, sort_keys=False))


HOUSING_TARGETS = ("results/fig1c.pdf", "results/fig4.pdf", "results/fig7.pdf")


@pytest.fixture(scope="session")
def housing_built(tmp_path_factory) -> Path:
    """The Housing figures (fig1c, fig4, fig7) built once per session at smoke scale on a synthetic Housing-format
    CSV, with one repetition of R = 20 (the preset has 2 x 2 shards: every job is a Python process importing torch
    or scipy, ~2 s of CPU each), the package imported from its frozen copy. Read it as it is; edit or rerun only a
    :func:`copy_built` of it (the one-run figure is built on a copy: its Housing population is fig1c's, and it
    adds a shard to it). Tests that use it are marked ``xdist_group("housing")``."""
    work = copy_workflow(tmp_path_factory.mktemp("housing-built"), package=True)
    write_synthetic_csv(work / "housing.csv")
    configure_housing(work, repetitions=1, runs=20)
    run_snakemake(work, *HOUSING_TARGETS, timeout=900, env=package_env(work))
    return work
