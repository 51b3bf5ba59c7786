"""Property tests of the readers of untrusted text added with --reference-kernels and the result
pipe (issue 47): task.yml, eval.py's output and the worker's result-pipe events. Each reader
either gives its value or raises its one domain error, whatever the text, within a bound in CPU
seconds; hypothesis makes the cases (``@settings``: how many each)."""

from __future__ import annotations

import json

from cpu_bound import within_cpu
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from submitgen.errors import EvaluateError
from submitgen.evaluate import process
from submitgen.evaluate.popcorn import MAX_VALUE_LINES, parse_lines, read_result
from submitgen.evaluate.process import Malformed, parse_event
from submitgen.problems.reftask import read_task

CASES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------------------------- result pipe


_SCALAR = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
_JSONISH = _SCALAR | st.lists(_SCALAR, max_size=3) | st.dictionaries(st.text(max_size=6), _SCALAR, max_size=3)
_FIELDS = ("index", "digests", "call", "rechecks", "error", "backend", "timed_digests", "missing")
_EVENT = st.fixed_dictionaries({"event": st.sampled_from(sorted(process._EVENTS))},
                               optional={k: _JSONISH for k in _FIELDS})


@CASES
@given(st.one_of(st.text(max_size=200), _EVENT.map(json.dumps), _JSONISH.map(json.dumps)),
       st.integers(min_value=0, max_value=4))
def test_any_result_pipe_line_is_an_event_or_malformed(line, count):
    with within_cpu(2, f"parse_event({line[:60]!r})"):
        try:
            ev = parse_event(line, count)
        except Malformed as e:
            assert str(e) and len(str(e)) < 400
        else:
            assert isinstance(ev, dict) and ev["event"] in process._EVENTS


# ------------------------------------------------------------------------------ eval.py output


def _joined_naively(text: str) -> dict[str, str]:
    """kernelbot's reading as the earlier, quadratic parse did it (the model for small texts)."""
    from submitgen.evaluate.popcorn import key_of

    out: dict[str, str] = {}
    last = None
    for line in text.splitlines():
        kv = key_of(line)
        if kv:
            last = kv[0]
            out[last] = kv[1]
        elif last is not None:
            out[last] = (out[last] + "\n" + line.rstrip()).strip("\n")
    return out


_KEYS = st.sampled_from(["check", "test-count", "benchmark-count", "test.0.status", "test.1.error",
                         "benchmark.0.mean", "benchmark.0.runs", "benchmark.2.worst", "test.12345678901.x"])
_LINE = st.one_of(st.builds(lambda k, sep, v: f"{k}{sep}{v}", _KEYS, st.sampled_from([":", " : ", ":  "]),
                            st.text(max_size=30)), st.text(max_size=40))


@CASES
@given(st.lists(_LINE, max_size=40).map("\n".join))
def test_eval_output_reads_as_kernelbot_does_and_never_raises(text):
    with within_cpu(2, "reading eval.py's output"):
        pairs = parse_lines(text)
        result = read_result(text, "benchmark")
        read_result(text, "test")
    assert pairs == _joined_naively(text)  # no value here is long enough to be cut
    assert result.check in (None, "pass", "fail") or isinstance(result.check, str)


@settings(max_examples=20, deadline=None)
@given(st.integers(min_value=MAX_VALUE_LINES - 2, max_value=3 * MAX_VALUE_LINES),
       st.text("ab .:", max_size=5))
def test_a_value_keeps_its_first_lines_and_counts_the_rest(n, filler):
    lines = parse_lines("test.0.error: head\n" + f"x{filler}\n" * n)["test.0.error"].split("\n")
    dropped = n - (MAX_VALUE_LINES - 1)
    assert lines[0] == "head" and lines[1] == f"x{filler}".rstrip()
    assert len(lines) == min(n + 1, MAX_VALUE_LINES) + (dropped > 0)
    if dropped > 0:
        assert lines[-1] == f"[{dropped:,} more lines not shown]"


# ----------------------------------------------------------------------------------- task.yml

_TOKENS = st.sampled_from([
    "files:", "  - ", '{"name": "submission.py", "source": "@SUBMISSION@"}', '{"name": "eval.py", "source": '
    '"eval.py"}', "lang: py", "config:", "  main: eval.py", "tests:", "benchmarks:", "ranking_by: geom",
    "test_timeout: ", "&a ", "&b ", "*a", "*b", "[", "]", "{", "}", ", ", ": ", "- ", "\n", "\n  ", "9" * 120,
    "-5", "1e400", ".nan", "!!int ", "!!python/object:os.system ", "<<: *a", "? ", "'", '"', "\t",
    "%YAML 1.1\n", "---\n", "...\n", "name: .", "name: helpers", "name: helpers/x.py", "\x00", "\x1b]0;t\x07",
    "\ufeff",
])


@CASES
@given(st.lists(_TOKENS, max_size=60).map("".join))
def test_any_task_yml_reads_or_is_one_evaluate_error(tmp_path_factory, text):
    d = tmp_path_factory.mktemp("task")
    (d / "task.yml").write_text(text, encoding="utf-8", errors="surrogateescape")
    (d / "eval.py").write_text("")
    with within_cpu(5, f"read_task of {text[:80]!r}"):
        try:
            task = read_task(d)
        except EvaluateError as e:
            assert len(str(e)) < 2000, "an error message that carries the whole value"
        else:
            assert task.main in {f.name for f in task.files}


# ------------------------------------------------------------------------------ plug-in strings


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["name", "leaderboard", "gpu", "arch"]),
       st.one_of(st.text(max_size=80), st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,70}", fullmatch=True)))
def test_a_plugins_names_are_listed_one_row_each_or_refused(field, value):
    """A problem's name, leaderboard, GPU and arch are what `submitgen problems` prints and the
    #!POPCORN lines carry: a plug-in's spec holds one clean name each, or it is refused with one
    ProblemError line (the registry's check of a plug-in's spec)."""
    from dataclasses import replace

    from toy_problem import PROBLEM

    from submitgen.errors import ProblemError
    from submitgen.problems.listing import format_problems
    from submitgen.problems.registry import _check, register, unregister

    names = {"name": "sg-prop", "leaderboard": "amd-sg-prop"}
    spec = replace(PROBLEM, **(names | {field: value}))
    with within_cpu(5, f"a spec with {field}={value[:40]!r}"):
        try:
            _check(spec.name, spec, "sg_prop.PROBLEM")
        except ProblemError as e:
            assert "\n" not in str(e) and str(e).startswith(f"{field} ")
            return
        assert value.isascii() and value.isprintable() and len(value) <= 64 and "\n" not in value
        try:
            register(spec)
        except ProblemError:
            return  # it clashes with a listed problem's name or leaderboard
        try:
            lines, _ = format_problems()
        finally:
            unregister(spec.name)
    rows = [ln for ln in lines if ln.startswith(spec.name + " ")]
    assert len(rows) == 1 and all(ln.isprintable() for ln in lines)


@CASES
@given(st.text(max_size=200), st.text(max_size=40))
def test_a_plugins_import_error_is_one_printable_line(error, package):
    from submitgen.registry import BrokenPlugin, one_line
    from submitgen.textfmt import printable

    reason = f"cannot be imported: RuntimeError: {one_line(error)}"
    broken = BrokenPlugin("problem", "sg-x", "sg_x", package, reason)
    shown = printable(broken.message())
    assert shown.isprintable() and "\n" not in shown and "\x1b" not in shown
