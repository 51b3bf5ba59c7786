"""Fuzz test: over 20,000 structured hostile inputs (fuzzgen.py: metadata, ELF, bundle, Python
literal and decompression-bomb cases, from code objects the tests compile) through the CLI's
``inspect``, ``inspect --json``, ``diff``, ``lint`` and ``build --co``, in-process with click's
runner, split over two forked workers (one per core); every 101st case also through ``cli.main``
in a forked child process, and every 707th through ``python -m submitgen``.

Every case must end within its time bound (a SIGALRM guard stops a hang, and the time is
measured; a case over it runs once more and fails if it is over it again, since a loaded machine
may stall one run) with exit status 0 or 1 and either its report or one ``Error:`` line, never a
traceback; JSON output must be strict JSON; a failing ``build --co`` writes no file and leaves an
existing good output byte for byte. A failure names the case (``fuzzgen.make(category, n,
seeds)`` makes it again) and the failing inputs are kept under the test's tmp folder.
``SUBMITGEN_FUZZ_CASES=N`` runs only the first N cases of each category (a quick look), and
``SUBMITGEN_FUZZ_CATEGORIES=storage,bounds`` only those categories."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import fuzzgen
import pytest
from click.testing import CliRunner
from elfedit import with_metadata
from fuzzgen import BUILD, DIFF, INSPECT, INSPECT_JSON, LINT, Case, Seeds

from submitgen.cli import cli
from submitgen.readers.containers import load_code_objects

PROJECT = Path(__file__).resolve().parent.parent / "projects" / "mm_basic"
LIMIT = int(os.environ.get("SUBMITGEN_FUZZ_CASES", "0")) or None
ONLY = tuple(c for c in os.environ.get("SUBMITGEN_FUZZ_CATEGORIES", "").split(",") if c)  # "storage,..."
# Every FORK_EVERY-th case also runs through cli.main in a forked child, and every EXEC_EVERY-th of
# those through `python -m submitgen` (prime strides: the samples cut across the command cycles).
FORK_EVERY, EXEC_EVERY = 101, 7
# Seconds one case may take in-process: a hang detector, with room for a loaded 2-core machine (a
# fuzzed object is read in 5-40 ms; a bomb decompresses 64 MiB in about 0.3 s; a build that passes
# runs the plan on every shape in a child process in about 0.3 s). The slowest case of each
# category and command is printed.
BOUND_S = {"case": 5.0, "bomb": 10.0, BUILD: 10.0, "bounds": 10.0}
SUBPROCESS_BOUND_S = 30.0


class CaseTimeout(BaseException):
    """Raised by the SIGALRM guard in a case that ran past its bound."""


def cpu() -> float:
    """CPU seconds of this process and its children so far (the machine may be shared)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def bound_of(case: Case) -> float:
    return BOUND_S[BUILD] if case.command == BUILD else BOUND_S.get(case.category, BOUND_S["case"])


def _alarm(signum, frame):
    raise CaseTimeout


def _strict_json(text: str) -> None:
    def refuse(name: str):
        raise ValueError(f"non-strict JSON constant {name}")

    json.loads(text, parse_constant=refuse)


class Workspace:
    """The folder the cases run in: the build's project, reference inputs for diff, an output
    folder holding a good submission."""

    def __init__(self, root: Path, seeds: Seeds, good: bytes):
        self.root, self.seeds, self.good = root, seeds, good
        shutil.copytree(PROJECT, root / "proj")
        (root / "out").mkdir()
        (root / "out" / "s.py").write_bytes(good)
        (root / "ref.co").write_bytes(seeds.build_co)
        (root / "ref.py").write_bytes(good)

    def argv(self, case: Case, path: str) -> tuple[list[str], str | None]:
        """The CLI arguments of ``case`` on ``path``, and the output a build writes to."""
        if case.command == BUILD:
            out = "out/s.py" if case.n % 2 else "out/new.py"
            proj = "planproj" if case.plan is not None else "proj"
            return ["build", "mxfp4-mm", "--kernels", proj, "--co", path, "-o", out], out
        if case.command in (INSPECT, INSPECT_JSON):
            flags = ["--json"] if case.command == INSPECT_JSON else []
            return ["inspect", *flags, "--no-disasm", *case.options, path], None
        if case.command == DIFF:
            ref = "ref.py" if case.suffix == ".py" and case.n % 2 else "ref.co"
            pair = [ref, path] if case.n % 3 else [path, ref]
            return ["diff", *(["--json"] if case.n % 4 == 1 else []), *case.options, *pair], None
        return ["lint", *case.options, path], None

    def write(self, case: Case, folder: Path) -> str:
        """Write the case's file (and sidecar) into ``folder``; its name there."""
        path = folder / f"case{case.suffix}"
        path.write_bytes(case.data)
        if case.plan is not None:  # the project with the case's one edit of its plan
            plan_old, plan_new = case.plan
            launch = (PROJECT / "launch.py").read_text()
            assert launch.count(plan_old) == 1, plan_old
            if not (folder / "planproj").exists():
                shutil.copytree(PROJECT, folder / "planproj")
            (folder / "planproj" / "launch.py").write_text(launch.replace(plan_old, plan_new))
        side = path.with_suffix(".json")
        if case.sidecar is not None:
            side.write_bytes(case.sidecar)
        elif side.exists():
            side.unlink()
        return path.name

    def check_outputs(self, folder: Path, out: str | None, code: int) -> list[str]:
        """A build wrote its whole output or nothing; an earlier good output stays as it was."""
        if out is None:
            return []
        problems = []
        target = folder / out
        if code == 0:
            if not target.is_file() or not target.read_bytes().startswith(b"#!POPCORN"):
                problems.append(f"exit 0 but {out} is not a submission")
        elif target.name == "s.py" and target.read_bytes() != self.good:
            problems.append(f"a failing build changed the existing {out}")
        elif target.name == "new.py" and target.exists():
            problems.append(f"a failing build wrote {out}")
        extra = sorted(p.name for p in (folder / "out").iterdir() if p.name not in ("s.py", "new.py"))
        if extra:
            problems.append(f"left in out/: {extra}")
        (folder / "out" / "s.py").write_bytes(self.good)
        if (folder / "out" / "new.py").exists():
            (folder / "out" / "new.py").unlink()
        return problems


def judge(case: Case, argv: list[str], code: int, output: str, stdout: str | None = None) -> list[str]:
    """What is wrong with a case's result (nothing: an empty list)."""
    problems = []
    if case.expect is not None and code != case.expect:
        problems.append(f"exit status {code}, expected {case.expect}: {output[-300:]!r}")
    if "Traceback (most recent call last)" in output:
        problems.append("traceback in the output")
    if code not in (0, 1):
        problems.append(f"exit status {code}")
    errors = [line for line in output.splitlines() if line.startswith("Error:")]
    if errors:
        if len(errors) > 1 or output.rstrip("\n") != errors[0] or len(errors[0]) <= len("Error: "):
            problems.append(f"not one Error line: {output[-300:]!r}")
        return problems
    if not output.strip():
        problems.append("no output and no Error line")
    elif "--json" in argv:
        try:
            _strict_json(stdout if stdout is not None else output)
        except ValueError as e:
            problems.append(f"not strict JSON: {e}")
    elif case.command == LINT and code == 0 and "lint passed" not in output.splitlines()[-1]:
        problems.append("lint exit 0 without 'lint passed'")
    elif case.command == BUILD and code != 0:
        problems.append(f"build exit {code} without an Error line")
    return problems


def outcome(code: int, output: str) -> str:
    return "error" if output.startswith("Error:") else "ok" if code == 0 else "findings"


def run_in_process(ws: Workspace, case: Case, runner: CliRunner) -> tuple[list[str], float, str]:
    path = ws.write(case, ws.root)
    argv, out = ws.argv(case, path)
    bound = (
        BOUND_S[BUILD] if case.command == BUILD else BOUND_S.get(case.category, BOUND_S["case"])
    )
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, bound)
    t0 = time.perf_counter()
    try:
        r = runner.invoke(cli, argv)
    except CaseTimeout:
        return [f"hang: still running after {bound} s"], time.perf_counter() - t0, "hang"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    took = time.perf_counter() - t0
    problems = []
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        tb = "".join(traceback.format_exception(type(r.exception), r.exception, r.exception.__traceback__))
        problems.append(f"uncaught {type(r.exception).__name__}: {r.exception}\n{tb[-2500:]}")
    problems += judge(case, argv, r.exit_code, r.output)
    problems += ws.check_outputs(ws.root, out, r.exit_code)
    if took > bound:
        problems.append(f"took {took:.2f} s, over the {bound} s bound")
    return problems, took, outcome(r.exit_code, r.output)


def _main_in_fork(argv: list[str], folder: Path, bound: float) -> tuple[int | None, str, str]:
    """``submitgen ARGV`` through ``cli.main`` in a forked child (its own process, exit status and
    file descriptors 1 and 2): (exit status, or None if it was still running after ``bound``
    seconds and was killed; stdout; stderr)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.chdir(folder)
            for fd, name in ((1, "stdout.txt"), (2, "stderr.txt")):
                f = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(f, fd)
                os.close(f)
            sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
            try:
                cli.main(argv, prog_name="submitgen")
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
            except BaseException:
                traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    deadline = time.monotonic() + bound
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None, "", ""
        time.sleep(0.002)
    code = os.waitstatus_to_exitcode(status)
    return code, (folder / "stdout.txt").read_text(), (folder / "stderr.txt").read_text()


def run_forked(ws: Workspace, case: Case) -> list[str]:
    """The case through ``cli.main`` in a forked child process (the in-process run left its file)."""
    argv, out = ws.argv(case, f"case{case.suffix}")
    bound = (
        BOUND_S[BUILD] if case.command == BUILD else BOUND_S.get(case.category, BOUND_S["case"])
    )
    code, stdout, stderr = _main_in_fork(argv, ws.root, bound)
    if code is None:
        return [f"hang: the forked child still running after {bound} s"]
    return judge(case, argv, code, stdout + stderr, stdout=stdout) + ws.check_outputs(ws.root, out, code)


def run_subprocess(ws: Workspace, case: Case) -> tuple[list[str], float]:
    """The case through ``python -m submitgen`` (inspect with the disassembler, when installed)."""
    folder = ws.root / "sub" / case.name.replace("#", "-")
    folder.mkdir(parents=True)
    (folder / "out").mkdir()
    (folder / "out" / "s.py").write_bytes(ws.good)
    for name in ("proj", "ref.co", "ref.py"):
        os.symlink(ws.root / name, folder / name)
    argv, out = ws.argv(case, ws.write(case, folder))
    if argv[0] == "inspect" and case.n % 2:
        argv.remove("--no-disasm")
    t0 = time.perf_counter()
    try:
        r = subprocess.run(
            [sys.executable, "-m", "submitgen", *argv],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=SUBPROCESS_BOUND_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return [f"hang: python -m submitgen still running after {SUBPROCESS_BOUND_S} s"], SUBPROCESS_BOUND_S
    took = time.perf_counter() - t0
    problems = judge(case, argv, r.returncode, r.stdout + r.stderr, stdout=r.stdout)
    problems += ws.check_outputs(folder, out, r.returncode)
    return problems, took


@pytest.fixture(scope="module")
def seeds(cos, tmp_path_factory) -> tuple[Seeds, bytes]:
    """The tests' code objects, and a good submission of the build project (with its object)."""
    build_dir = tmp_path_factory.mktemp("fuzz-build")
    shutil.copytree(PROJECT, build_dir / "proj")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(build_dir)
        mp.setenv("SUBMITGEN_CACHE_DIR", str(build_dir / "cache"))
        r = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", "proj", "-o", "good.py"])
        assert r.exit_code == 0, r.output
    good = (build_dir / "good.py").read_bytes()
    return Seeds(dict(cos), load_code_objects(build_dir / "good.py")[0].data, good.decode()), good


@pytest.fixture(scope="module")
def workspace(seeds, tmp_path_factory):
    return Workspace(tmp_path_factory.mktemp("fuzz"), *seeds)


def _record(tally: dict, case: Case, took: float, result: str, problems: list[str], saved: Path) -> None:
    key = f"{case.category} {case.command}"
    tally["counts"][f"{case.category}|{case.command}"] = (
        tally["counts"].get(f"{case.category}|{case.command}", 0) + 1
    )
    tally["results"][f"{case.category}|{result}"] = tally["results"].get(f"{case.category}|{result}", 0) + 1
    tally["spent"][key] = tally["spent"].get(key, 0.0) + took
    if took > tally["slowest"].get(key, (0.0, ""))[0]:
        tally["slowest"][key] = (took, case.name)
    if problems:
        saved.mkdir(exist_ok=True)
        (saved / f"{case.category}-{case.n}{case.suffix}").write_bytes(case.data)
        tally["failures"].append(
            f"{case.name} [{case.command} {' '.join(case.options)}] {case.what[:200]}: {'; '.join(problems)}"
        )


def run_shard(ws: Workspace, shard: int, shards: int) -> dict:
    """Every ``shards``-th case (from the ``shard``-th) in this process: counts, outcomes, times,
    failures, and the cases picked for ``python -m submitgen``."""
    os.chdir(ws.root)
    os.environ["SUBMITGEN_CACHE_DIR"] = str(ws.root / "cache")
    runner = CliRunner()
    for argv in (
        ["inspect", "--no-disasm", "ref.co"],
        ["lint", "ref.py"],
        ["diff", "ref.py", "ref.co"],
        ["build", "mxfp4-mm", "--kernels", "proj", "--co", "ref.co", "-o", "out/new.py"],
    ):
        r = runner.invoke(cli, argv)  # the unmutated inputs pass (and warm up the imports)
        assert r.exit_code == 0, (argv, r.output)
    (ws.root / "out" / "new.py").unlink()
    tally: dict = {
        "counts": {},
        "results": {},
        "spent": {},
        "slowest": {},
        "failures": [],
        "sampled": [],
        "reruns": [],
    }
    index = 0
    for category, count in fuzzgen.COUNTS.items():
        if ONLY and category not in ONLY:
            continue
        for n in range(min(count, LIMIT or count)):
            index += 1
            if index % shards != shard:
                continue
            case = fuzzgen.make(category, n, ws.seeds)
            problems, took, result = run_in_process(ws, case, runner)
            if any(p.startswith(("hang:", "took ")) for p in problems):  # the case, or a stalled machine?
                tally["reruns"].append(f"{case.name} ({took:.1f} s)")
                problems, took, result = run_in_process(ws, case, runner)
            _record(tally, case, took, result, problems, ws.root / "failures")
            if index % FORK_EVERY == 0:
                tally["counts"][f"forked|{case.command}"] = (
                    tally["counts"].get(f"forked|{case.command}", 0) + 1
                )
                tally["failures"] += [
                    f"{case.name} [forked {case.command}]: {p}" for p in run_forked(ws, case)
                ]
                if index % (FORK_EVERY * EXEC_EVERY) == 0:
                    tally["sampled"].append((category, n))
    return tally


def _start(fn) -> tuple[int, int]:
    """Run ``fn()`` (its value JSON-able) in a forked child: (pid, the pipe its value comes on)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read)
            try:
                out = {"ok": fn()}
            except BaseException:
                out = {"crash": traceback.format_exc()}
            with os.fdopen(write, "w") as f:
                json.dump(out, f)
        finally:
            os._exit(0)
    os.close(write)
    return pid, read


def _finish(pid: int, read: int) -> dict:
    with os.fdopen(read) as f:
        text = f.read()
    os.waitpid(pid, 0)
    out = json.loads(text) if text else {"crash": "the worker died without a word"}
    assert "crash" not in out, out["crash"]
    return out["ok"]


@pytest.mark.slow
def test_fuzz_cli(seeds, tmp_path):
    """The cases in two forked workers (one per core of the CI machine), each in a folder of its own."""
    start = cpu()
    shards = 2
    workspaces = [Workspace(tmp_path / f"shard{k}", *seeds) for k in range(shards)]
    workers = [_start(lambda k=k: run_shard(workspaces[k], k, shards)) for k in range(shards)]
    tallies = [_finish(*w) for w in workers]
    counts: Counter[str] = Counter()
    results: Counter[str] = Counter()
    spent: Counter[str] = Counter()
    slowest: dict[str, tuple[float, str]] = {}
    failures: list[str] = []
    reruns = [name for t in tallies for name in t["reruns"]]
    for t in tallies:
        counts.update(t["counts"])
        results.update(t["results"])
        spent.update(t["spent"])
        failures += t["failures"]
        for key, (took, name) in t["slowest"].items():
            if took > slowest.get(key, (0.0, ""))[0]:
                slowest[key] = (took, name)
    sampled = [fuzzgen.make(c, n, workspaces[0].seeds) for t in tallies for c, n in t["sampled"]]
    with ThreadPoolExecutor(2) as pool:
        for case, (problems, _) in zip(
            sampled, pool.map(lambda c: run_subprocess(workspaces[0], c), sampled)
        ):
            counts[f"subprocess|{case.command}"] += 1
            failures += [
                f"{case.name} [python -m submitgen {case.command}] {case.what[:200]}: {p}" for p in problems
            ]
    total = sum(n for key, n in counts.items() if key.split("|")[0] not in ("forked", "subprocess"))
    forked = sum(n for key, n in counts.items() if key.startswith("forked|"))
    table = "\n".join(f"  {k.split('|')[0]:10} {k.split('|')[1]:15} {n:6}" for k, n in sorted(counts.items()))
    slow = "\n".join(
        f"  {k:26} {t:6.3f} s ({name}); all {spent[k]:.1f} s" for k, (t, name) in sorted(slowest.items())
    )
    seen = "\n".join(f"  {k.split('|')[0]:10} {k.split('|')[1]:9} {n:6}" for k, n in sorted(results.items()))
    print(
        f"\nfuzz cases: {total} in-process; {forked} of them also in a forked process, {len(sampled)} "
        f"through python -m submitgen; {cpu() - start:.0f} s of CPU; over the bound once, then within it: "
        f"{', '.join(reruns) or 'none'}\n{table}\noutcomes:\n{seen}\n"
        f"slowest:\n{slow}"
    )
    assert not failures, (
        f"{len(failures)} failing cases (inputs in {tmp_path}/shard*/failures):\n" + "\n".join(failures[:40])
    )
    assert LIMIT or ONLY or total >= 20_000


def test_a_kernel_name_with_a_line_break_stays_on_the_error_line(workspace, tmp_path, monkeypatch):
    """Found by the fuzz test (meta#5319): a missing-kernel error listed the object's names as they
    were, so a name holding a line break split the Error line in two."""
    co = tmp_path / "k.co"

    def rename(doc):
        next(k for k in doc["amdhsa.kernels"] if k[".name"] == "mm_tile")[".name"] = "new\nline"

    co.write_bytes(with_metadata(workspace.seeds.build_co, rename))
    monkeypatch.chdir(workspace.root)
    r = CliRunner().invoke(
        cli, ["build", "mxfp4-mm", "--kernels", "proj", "--co", str(co), "-o", "out/new.py"]
    )
    assert (r.exit_code, r.output) == (
        1,
        "Error: KERNELS names 'mm_tile', which the code object does not have "
        "(it has: mm_reduce, 'new\\nline')\n",
    )
    assert not (workspace.root / "out" / "new.py").exists()
