"""Fuzz test: structured hostile inputs (fuzzgen.py: metadata, ELF, bundle, Python literal and
decompression-bomb cases, from code objects the tests compile; the suite runs its fixed sample of
4,172, fuzzgen.SAMPLE, and ``SUBMITGEN_FUZZ_CASES=all`` all 20,572 of fuzzgen.COUNTS) through the CLI's
``inspect``, ``inspect --json``, ``diff``, ``lint`` and ``build --co``, in-process with click's
runner, split over two forked workers (one per core); every 101st case also through ``cli.main``
in a forked child process, and every 707th through ``python -m submitgen``.

Every case must end within its bound in CPU seconds (what the case spent, in this process and
the children it waited for: a loaded machine gives a case less of the CPU, not more work), with a
wall-clock limit of a minute only to stop a real hang (a read that never returns uses no CPU). A
case over its CPU bound is a defect of the tool. A case that only ran past the wall-clock limit is
retried once, after the other cases, and said to be on an overloaded machine (the load average)
when it passes then. Exit status 0 or 1 and either its report or one ``Error:`` line, never a
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
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
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
_CASES = os.environ.get("SUBMITGEN_FUZZ_CASES", "")
# cases per category: the suite's sample, all of them, or the first N of each
PLAN = (dict(fuzzgen.COUNTS) if _CASES == "all" else
        {c: min(n, int(_CASES)) for c, n in fuzzgen.COUNTS.items()} if _CASES else dict(fuzzgen.SAMPLE))
ONLY = tuple(c for c in os.environ.get("SUBMITGEN_FUZZ_CATEGORIES", "").split(",") if c)  # "storage,..."
# Every FORK_EVERY-th case also runs through cli.main in a forked child, and every EXEC_EVERY-th of
# those through `python -m submitgen` (prime strides: the samples cut across the command cycles).
FORK_EVERY, EXEC_EVERY = 101, 7
# CPU seconds one case may spend in-process, its waited-for children included (a fuzzed object is
# read in 5-40 ms; a bomb decompresses 64 MiB in about 0.3 s; a build that passes runs the plan on
# every shape in a child process in about 0.3 s). The slowest case of each category and command is
# printed, in CPU seconds.
BOUND_S = {"case": 5.0, "bomb": 10.0, BUILD: 10.0, "bounds": 10.0}
SUBPROCESS_BOUND_S = 30.0
# Wall-clock seconds after which a case is stopped: a hang detector only (a case that waits on
# something forever, or a machine so loaded that a minute gives a case less than its CPU bound).
HANG_S = 60.0
SUBPROCESS_HANG_S = 120.0


class CaseTimeout(BaseException):
    """Raised in a case by its guard: ``CaseTimeout("cpu")`` past its CPU bound (SIGPROF),
    ``CaseTimeout("wall")`` past the wall-clock limit (SIGALRM)."""


def load() -> str:
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def cpu() -> float:
    """CPU seconds of this process and its children so far (the machine may be shared)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def bound_of(case: Case) -> float:
    return BOUND_S[BUILD] if case.command == BUILD else BOUND_S.get(case.category, BOUND_S["case"])


def _wall(signum, frame):
    raise CaseTimeout("wall")


def _cpu(signum, frame):
    raise CaseTimeout("cpu")


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


def run_in_process(ws: Workspace, case: Case, runner: CliRunner) -> tuple[list[str], float, str, bool]:
    """(problems, CPU seconds spent, outcome, whether the case only ran past the wall-clock limit)."""
    path = ws.write(case, ws.root)
    argv, out = ws.argv(case, path)
    bound = bound_of(case)
    old_wall, old_cpu = signal.signal(signal.SIGALRM, _wall), signal.signal(signal.SIGPROF, _cpu)
    signal.setitimer(signal.ITIMER_REAL, HANG_S)
    signal.setitimer(signal.ITIMER_PROF, bound)
    c0 = cpu()
    try:
        r = runner.invoke(cli, argv)
    except CaseTimeout as stop:
        took = cpu() - c0
        if stop.args == ("cpu",):
            return [f"defect: used its CPU bound of {bound} s and was stopped"], took, "hang", False
        return ([f"hang: still running after {HANG_S:g} s of wall time, having used {took:.1f} s of CPU "
                 f"({load()})"], took, "hang", True)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGALRM, old_wall)
        signal.signal(signal.SIGPROF, old_cpu)
    took = cpu() - c0
    problems = []
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        tb = "".join(traceback.format_exception(type(r.exception), r.exception, r.exception.__traceback__))
        problems.append(f"uncaught {type(r.exception).__name__}: {r.exception}\n{tb[-2500:]}")
    problems += judge(case, argv, r.exit_code, r.output)
    problems += ws.check_outputs(ws.root, out, r.exit_code)
    if took > bound:
        problems.append(f"defect: took {took:.2f} s of CPU, over its {bound} s CPU bound")
    return problems, took, outcome(r.exit_code, r.output), False


def _wait(pid: int, hang_s: float) -> tuple[int | None, float]:
    """Wait for child ``pid``: (its exit status, or None if it was still running after ``hang_s``
    seconds of wall time and was killed; the CPU seconds it used, its waited-for children too)."""
    deadline = time.monotonic() + hang_s
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            _, _, usage = os.wait4(pid, 0)
            return None, usage.ru_utime + usage.ru_stime
        time.sleep(0.002)


def _in_child(folder: Path, child: Callable[[], int], hang_s: float) -> tuple[int | None, float]:
    """Fork; the child runs in ``folder`` with fd 0 from /dev/null and fds 1 and 2 into its
    ``stdout.txt`` and ``stderr.txt``, and exits with what ``child()`` returns (127 if it raised
    or returned nothing, as an exec that failed does). (Exit status, or None if it was still
    running after ``hang_s`` seconds of wall time and was killed; the CPU seconds it used.)
    Not subprocess: ``os.wait4`` gives this child's own CPU time, where two run at once."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 127
        try:
            os.chdir(folder)
            for fd, name, flags in ((0, os.devnull, os.O_RDONLY),
                                    (1, "stdout.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                    (2, "stderr.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
                f = os.open(name, flags, 0o644)
                os.dup2(f, fd)
                os.close(f)
            code = child()
        finally:
            os._exit(code)
    return _wait(pid, hang_s)


def _cli_main(argv: list[str]) -> int:
    """``submitgen ARGV`` through ``cli.main``, in the child: its exit status (1 after a traceback,
    which is printed)."""
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    code = 1
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
    return code


def _main_in_fork(argv: list[str], folder: Path) -> tuple[int | None, float, str, str]:
    """``submitgen ARGV`` through ``cli.main`` in a forked child (its own process, exit status and
    file descriptors 1 and 2): (exit status, or None if it was still running after ``HANG_S``
    seconds and was killed; its CPU seconds; stdout; stderr)."""
    code, used = _in_child(folder, lambda: _cli_main(argv), HANG_S)
    if code is None:
        return None, used, "", ""
    return code, used, (folder / "stdout.txt").read_text(), (folder / "stderr.txt").read_text()


def run_forked(ws: Workspace, case: Case) -> list[str]:
    """The case through ``cli.main`` in a forked child process (the in-process run left its file)."""
    argv, out = ws.argv(case, f"case{case.suffix}")
    bound = bound_of(case)
    code, used, stdout, stderr = _main_in_fork(argv, ws.root)
    if code is None:
        return [f"hang: the forked child still running after {HANG_S:g} s of wall time, having used "
                f"{used:.1f} s of CPU ({load()})"]
    problems = judge(case, argv, code, stdout + stderr, stdout=stdout) + ws.check_outputs(ws.root, out, code)
    if used > bound:
        problems.append(f"defect: the forked child took {used:.2f} s of CPU, over its {bound} s CPU bound")
    return problems


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
    command = [sys.executable, "-m", "submitgen", *argv]
    code, used = _in_child(folder, lambda: os.execv(command[0], command), SUBPROCESS_HANG_S)
    if code is None:
        return [f"hang: python -m submitgen still running after {SUBPROCESS_HANG_S:g} s of wall time, "
                f"having used {used:.1f} s of CPU ({load()})"], used
    stdout = (folder / "stdout.txt").read_text(errors="replace")
    problems = judge(case, argv, code, stdout + (folder / "stderr.txt").read_text(errors="replace"),
                     stdout=stdout)
    problems += ws.check_outputs(folder, out, code)
    if used > SUBPROCESS_BOUND_S:
        problems.append(f"defect: took {used:.2f} s of CPU, over its {SUBPROCESS_BOUND_S:g} s CPU bound")
    return problems, used


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
    deferred: list[tuple[int, str, int, Case]] = []
    for category, count in PLAN.items():
        if ONLY and category not in ONLY:
            continue
        for n in range(count):
            index += 1
            if index % shards != shard:
                continue
            case = fuzzgen.make(category, n, ws.seeds)
            problems, took, result, wall_only = run_in_process(ws, case, runner)
            if wall_only:  # a hang, or an overloaded machine: once more, after the other cases
                tally["reruns"].append(f"{case.name} ({took:.1f} s of CPU in {HANG_S:g} s; {load()})")
                deferred.append((index, category, n, case))
                continue
            _finish_case(ws, tally, runner, index, category, n, case, (problems, took, result))
    for index, category, n, case in deferred:
        problems, took, result, _ = run_in_process(ws, case, runner)
        problems = [f"{p} (the second time, after the other cases)" if p.startswith("hang:") else p
                    for p in problems]
        _finish_case(ws, tally, runner, index, category, n, case, (problems, took, result))
    return tally


def _finish_case(ws: Workspace, tally: dict, runner: CliRunner, index: int, category: str, n: int, case: Case,
                 ran: tuple[list[str], float, str]) -> None:
    problems, took, result = ran
    _record(tally, case, took, result, problems, ws.root / "failures")
    if index % FORK_EVERY == 0:
        tally["counts"][f"forked|{case.command}"] = tally["counts"].get(f"forked|{case.command}", 0) + 1
        tally["failures"] += [f"{case.name} [forked {case.command}]: {p}" for p in run_forked(ws, case)]
        if index % (FORK_EVERY * EXEC_EVERY) == 0:
            tally["sampled"].append((category, n))


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
        f"through python -m submitgen; {cpu() - start:.0f} s of CPU; past the {HANG_S:g} s wall-clock "
        f"limit once, so retried after the others (the machine is overloaded if they passed then): "
        f"{', '.join(reruns) or 'none'}\n{table}\noutcomes:\n{seen}\n"
        f"slowest, in CPU seconds:\n{slow}"
    )
    assert not failures, (
        f"{len(failures)} failing cases (inputs in {tmp_path}/shard*/failures):\n" + "\n".join(failures[:40])
    )
    assert total == sum(n for c, n in PLAN.items() if not ONLY or c in ONLY)


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


class _Busy:
    """A runner whose case spins on the CPU, or waits, for ``seconds``."""

    def __init__(self, seconds: float, spin: bool):
        self.seconds, self.spin = seconds, spin

    def invoke(self, *_args, **_kwargs):
        end = time.monotonic() + self.seconds
        while time.monotonic() < end:
            if not self.spin:
                time.sleep(0.01)


def test_a_case_over_its_cpu_bound_is_a_defect_and_a_wait_is_a_hang(workspace, monkeypatch):
    """The bounds are CPU time (issue 28): a case that spends its bound on the CPU is stopped and
    called a defect; one that waits past the wall-clock limit, using no CPU, is a hang to retry."""
    monkeypatch.chdir(workspace.root)
    case = fuzzgen.make("meta", 0, workspace.seeds)
    monkeypatch.setitem(BOUND_S, "case", 0.2)
    monkeypatch.setitem(BOUND_S, BUILD, 0.2)
    problems, took, result, wall_only = run_in_process(workspace, case, _Busy(30, spin=True))
    assert problems == ["defect: used its CPU bound of 0.2 s and was stopped"]
    assert (result, wall_only) == ("hang", False)
    assert 0.15 < took < 5
    monkeypatch.setattr(sys.modules[__name__], "HANG_S", 0.5)
    problems, took, result, wall_only = run_in_process(workspace, case, _Busy(30, spin=False))
    assert (result, wall_only) == ("hang", True) and took < 0.2
    assert len(problems) == 1 and problems[0].startswith(
        "hang: still running after 0.5 s of wall time, having used 0.")
    assert problems[0].endswith(f" on {os.cpu_count()} cores)") and "load average" in problems[0]
