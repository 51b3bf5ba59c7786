"""Bad --reference-kernels folders and task.yml files: one exact `Error:` line each, nothing run,
no traceback. And eval.py's output read back: continuation lines, junk, a missing verdict."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from cpu_bound import within_cpu

from submitgen.cli import cli
from submitgen.evaluate.popcorn import parse_lines, read_result
from submitgen.problems.reftask import cases_text, read_task

REF = Path(__file__).resolve().parent.parent / "refkernels"
GOOD = ("#!POPCORN leaderboard amd-mxfp4-mm\n#!POPCORN gpu MI355X\n\n\ndef custom_kernel(data):\n"
        "    a, b = data\n    return [x + y for x, y in zip(a, b)]\n")
FILES = ('files:\n  - {"name": "submission.py", "source": "@SUBMISSION@"}\n'
         '  - {"name": "reference.py", "source": "reference.py"}\n'
         '  - {"name": "eval.py", "source": "eval.py"}\n')
BOMB = ('a0: &a0 "lolololol"\n'
        + "".join(f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10)) + "lang: *a9\n")
REST = 'lang: "py"\nconfig:\n  main: "eval.py"\ntests:\n  - {"n": 4, "seed": 1}\n'


def folder(tmp_path: Path, task: str) -> Path:
    d = tmp_path / "problem"
    d.mkdir()
    (d / "task.yml").write_text(task)
    (d / "reference.py").write_text("")
    (d / "eval.py").write_text("")
    return d


def error_of(tmp_path: Path, d: Path, *args: str) -> list[str]:
    sub = tmp_path / "good.py"
    sub.write_text(GOOD)
    result = CliRunner().invoke(cli, ["test", str(sub), "--reference-kernels", str(d), *args],
                                catch_exceptions=False)
    assert result.exit_code == 1
    return result.output.splitlines()


CASES = [
    ("not_yaml", FILES + REST + "benchmarks: [1, 2\nranking_by: geom\n",
     "{p}: not valid YAML (line 11): expected ',' or ']', but got ':'"),
    ("not_a_mapping", "- 1\n- 2\n", "{p}: expected a mapping of task keys, got list"),
    ("cuda", FILES + REST.replace('"py"', '"cu"'),
     "{p}: lang 'cu': only Python tasks (lang: \"py\") can be run"),
    ("no_submission", FILES.replace("@SUBMISSION@", "submission.py") + REST,
     "{p}: 'files' must name the submission (@SUBMISSION@) once, found 0"),
    ("escapes", FILES.replace('"name": "reference.py"', '"name": "../reference.py"') + REST,
     "{p}: files[1] name '../reference.py' must be a relative path inside the run folder"),
    ("twice", FILES.replace('"name": "reference.py"', '"name": "eval.py"') + REST,
     "{p}: files[2] name 'eval.py' is listed twice"),
    ("no_name", FILES.replace('"name": "reference.py", ', "") + REST,
     "{p}: files[1] must have a 'name' and a 'source' string, got {{'source': 'reference.py'}}"),
    ("main_unlisted", FILES + REST.replace('main: "eval.py"', 'main: "run.py"'),
     "{p}: config.main 'run.py' must be one of the listed files (reference.py, eval.py)"),
    ("bad_value", FILES + REST.replace('"seed": 1', '"seed": "1; rm -rf /"'),
     "{p}: tests[0] seed: '1; rm -rf /' is not a value eval.py reads (an integer or a name)"),
    ("bad_key", FILES + REST.replace('"n": 4', '"n m": 4'),
     "{p}: tests[0] key 'n m' is not a name eval.py reads"),
    ("bad_timeout", FILES + REST + "test_timeout: -5\n",
     "{p}: test_timeout must be a positive number of seconds, got -5"),
    ("no_tests", FILES + REST.split("tests:")[0], "{p}: lists no tests, which mode test runs"),
    # issue 47: a hang (the alias bomb's repr), tracebacks (a 5,000-digit int, a name '.', a file
    # listed as a folder of another)
    ("alias_bomb", BOMB,
     "{p}: expands to more than 100,000 values (each alias counted at each use); not read"),
    ("digits", FILES + REST + "test_timeout: " + "9" * 5000 + "\n",
     "{p}: line 10: an integer of 5,000 characters, more than the 100 read"),
    ("dot", FILES.replace('"name": "reference.py"', '"name": "."') + REST,
     "{p}: files[1] name '.' is the run folder itself, not a file in it"),
    ("file_then_folder", FILES + '  - {"name": "helpers", "source": "reference.py"}\n'
     '  - {"name": "helpers/extra.py", "source": "reference.py"}\n' + REST,
     "{p}: files[4] name 'helpers/extra.py' is inside 'helpers', which files[3] names as a file"),
    ("folder_then_file", FILES + '  - {"name": "helpers/extra.py", "source": "reference.py"}\n'
     '  - {"name": "./helpers", "source": "reference.py"}\n' + REST,
     "{p}: files[3] name 'helpers/extra.py' is inside './helpers', which files[4] names as a file"),
    ("holds_itself", FILES + REST + "ranking_by: &r [*r]\n",
     "{p}: line 10: an alias inside the value it names (a value that holds itself); not read"),
    ("deep", FILES + REST + "ranking_by: " + "[" * 65 + "]" * 65 + "\n",
     "{p}: nested more than 64 levels deep; not read"),
    ("many_files", 'files:\n' + '  - {"name": "x", "source": "eval.py"}\n' * 101 + REST,
     "{p}: 'files' lists 101 files, more than the 100 read"),
    ("empty_int", FILES + REST + "test_timeout: !!int ''\n",  # found by test_untrusted_text.py
     "{p}: not valid YAML: a value does not fit its tag (IndexError: string index out of range)"),
    ("long_value", FILES + REST.replace('"seed": 1', '"seed": "1; ' + "x" * 10**4 + '"'),
     "{p}: tests[0] seed: '1; " + "x" * 34 + "..." + "x" * 38 + "' is not a value eval.py reads (an "
     "integer or a name)"),
]


@pytest.mark.parametrize(("name", "task", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_task_yml_gives_one_error_line(tmp_path, name, task, message):
    d = folder(tmp_path, task)
    assert error_of(tmp_path, d) == ["Error: " + message.format(p=d / "task.yml")]


def test_a_listed_file_that_is_missing_or_not_regular(tmp_path):
    d = folder(tmp_path, FILES + REST)
    (d / "reference.py").unlink()
    assert error_of(tmp_path, d) == [
        f"Error: {d / 'task.yml'}: the file {str(d / 'reference.py')!r} cannot be read: "
        "No such file or directory"]
    (d / "reference.py").mkdir()
    assert error_of(tmp_path, d) == [
        f"Error: {d / 'task.yml'}: the file {str(d / 'reference.py')!r} is not a regular file"]


def test_task_yml_and_its_files_are_bounded_in_size(tmp_path):
    d = folder(tmp_path, FILES + REST)
    with open(d / "reference.py", "wb") as f:
        f.truncate((16 << 20) + 1)  # sparse: nothing is written or read
    assert error_of(tmp_path, d) == [
        f"Error: {d / 'task.yml'}: the file {str(d / 'reference.py')!r} is 16,777,217 bytes, more than the "
        "16,777,216 read"]
    with open(d / "task.yml", "wb") as f:
        f.truncate((16 << 20) + 1)
    assert error_of(tmp_path, d) == [
        f"Error: task file {str(d / 'task.yml')!r} is 16,777,217 bytes, more than the 16,777,216 read"]


def test_not_a_problem_folder(tmp_path):
    assert error_of(tmp_path, tmp_path / "nowhere") == [
        f"Error: --reference-kernels {str(tmp_path / 'nowhere')!r}: not a folder (expected a "
        "reference-kernels problem folder holding task.yml)"]
    (tmp_path / "empty").mkdir()
    assert error_of(tmp_path, tmp_path / "empty") == [
        f"Error: --reference-kernels {str(tmp_path / 'empty')!r}: no task.yml in it (expected a "
        "reference-kernels problem folder, such as problems/amd_202602/mxfp4-mm)"]


def test_cases_file_is_kernelbot_format_and_ranking_by_last_runs_the_last_benchmark(tmp_path):
    task = read_task(REF / "toy_add")
    assert cases_text(task.tests) == "n: 64; seed: 1\nn: 200; seed: 2\n"
    assert cases_text(task.cases("leaderboard")) == "n: 1000; seed: 3\nn: 4000; seed: 4\n"  # ranking_by geom
    assert task.modules() == ("task", "utils", "reference")
    assert task.timeout("test") == 60 and task.timeout("leaderboard") == 120
    d = folder(tmp_path, FILES + REST + 'benchmarks:\n  - {"n": 8, "seed": 5}\n  - {"n": 9, "seed": 6}\n')
    last = read_task(d)
    assert last.ranking_by == "last" and cases_text(last.cases("benchmark")) == "n: 9; seed: 6\n"
    assert last.timeout("benchmark") == 180  # kernelbot's default


def test_eval_output_read_back():
    text = ("benchmark-count: 2\nbenchmark.0.spec: n: 8; seed: 1\nbenchmark.0.runs: 12\n"
            "benchmark.0.mean: 100.5\n"
            "benchmark.0.std: 2.0\nbenchmark.0.err: 0.5\nbenchmark.0.best: 98.0\nbenchmark.0.worst: 104.0\n"
            "benchmark.1.spec: n: 9; seed: 2\nbenchmark.1.status: fail\nbenchmark.1.error: mismatch found!\n"
            "  at index 3\nprinted by the submission: oops\ncheck: fail\n")
    assert parse_lines(text)["benchmark.1.error"] == \
        "mismatch found!\n  at index 3\nprinted by the submission: oops"
    r = read_result(text, "benchmark")
    assert r.count == 2 and r.check == "fail"
    assert r.cases[0].status == "pass" and r.cases[0].stats.runs == 12 and r.cases[0].stats.mean == 100.5
    assert r.cases[1].status == "fail" and r.cases[1].stats is None
    # a junk figure leaves the case without figures, and no check line means no verdict
    junk = read_result("benchmark.0.runs: lots\nbenchmark.0.mean: nan\n", "benchmark")
    assert junk.check is None and junk.cases[0].stats is None and junk.cases[0].status is None


def test_a_million_continuation_lines_are_read_in_linear_time():
    """Issue 47: 1,000,000 continuation lines after an error (eval.py's, or a submission's check
    message) were still being parsed at 120 s; a value keeps its first 1,000 lines."""
    text = "test.0.status: fail\ntest.0.error: boom\n" + "  more\n" * 1_000_000 + "check: fail\n"
    with within_cpu(10, "parsing 1,000,000 continuation lines"):
        r = read_result(text, "test")
    assert r.check == "fail" and r.cases[0].status == "fail"
    assert r.cases[0].error.splitlines()[:2] == ["boom", "  more"]
    assert r.cases[0].error.splitlines()[-2:] == ["  more", "[999,001 more lines not shown]"]
    assert len(r.cases[0].error.splitlines()) == 1_001


def test_eval_py_dies_with_submitgen(tmp_path):
    """kill -9 of `submitgen test --reference-kernels`: eval.py (which runs the submission) does not
    live on (PR_SET_PDEATHSIG)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    pid_file = tmp_path / "eval.pid"
    sub = tmp_path / "sleeper.py"
    sub.write_text(GOOD.split("\n\n\n")[0] + f"\nimport os\nimport time\n\n\ndef custom_kernel(data):\n"
                   f"    open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n    time.sleep(300)\n")
    repo = Path(__file__).resolve().parent.parent.parent
    proc = subprocess.Popen([sys.executable, "-m", "submitgen", "test", str(sub), "--reference-kernels",
                             str(REF / "toy_add")], env={**os.environ, "PYTHONPATH": str(repo)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline and proc.poll() is None, "eval.py never called custom_kernel"
            time.sleep(0.2)
        eval_pid = int(pid_file.read_text())
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 60  # a hang catcher: the loop ends as soon as it holds
    while time.monotonic() < deadline:
        try:
            os.kill(eval_pid, 0)
        except ProcessLookupError:
            return
        with open(f"/proc/{eval_pid}/stat") as f:
            if f.read().split(") ", 1)[1].startswith("Z"):  # a zombie: dead, waiting for its reaper
                return
        time.sleep(0.2)
    os.kill(eval_pid, signal.SIGKILL)
    raise AssertionError("eval.py outlived submitgen")


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_what_eval_py_started_dies_with_submitgen(tmp_path, how):
    """The real eval.py runs the submission in a spawned pool worker, a child of eval.py that
    PR_SET_PDEATHSIG does not reach (here: a process the submission starts). When submitgen is
    stopped (SIGTERM: `timeout`, a CI cancel; or kill -9), eval.py's whole process group ends, so
    nothing of the run keeps the GPU busy or holds its memory."""
    import os
    import signal
    import subprocess
    import sys
    import time

    pid_file = tmp_path / "child.pid"
    sub = tmp_path / "spawner.py"
    sub.write_text(GOOD.split("\n\n\n")[0] + "\nimport subprocess\nimport sys\nimport time\n\n\n"
                   "def custom_kernel(data):\n"
                   "    child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
                   f"    open({str(pid_file)!r}, 'w').write(str(child.pid))\n    time.sleep(300)\n")
    repo = Path(__file__).resolve().parent.parent.parent
    proc = subprocess.Popen([sys.executable, "-m", "submitgen", "test", str(sub), "--reference-kernels",
                             str(REF / "toy_add")], env={**os.environ, "PYTHONPATH": str(repo)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline and proc.poll() is None, "custom_kernel never ran"
            time.sleep(0.2)
        child = int(pid_file.read_text())
    finally:
        proc.send_signal(getattr(signal, how))
        proc.wait(timeout=60)
    deadline = time.monotonic() + 60  # a hang catcher: the loop ends as soon as it holds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{child}/stat") as f:
                if f.read().split(") ", 1)[1].startswith("Z"):  # dead, waiting for its reaper
                    return
        except FileNotFoundError:
            return
        time.sleep(0.2)
    os.kill(child, signal.SIGKILL)
    raise AssertionError(f"a process eval.py's run started outlived submitgen ({how})")
