"""Submissions that try to forge `submitgen test`'s verdict from inside their own process: every
verdict is computed in the parent, from the fingerprint of the inputs the worker sent before the
call, the inputs regenerated in the parent and the output bytes; a patch of torch, hashlib, json
or of any submitgen name in the worker changes none of them."""

from __future__ import annotations

import pytest

from submitgen.evaluate import format_test_report, run_test
from submitgen.problems import get_problem

NOCLONE = "#!POPCORN leaderboard amd-toy-noclone\n#!POPCORN gpu MI355X\nimport os\n\nimport torch\n\n"
TOY = NOCLONE.replace("amd-toy-noclone", "amd-toy-add")
MOE_HEADER = "#!POPCORN leaderboard amd-moe-mxfp4\n#!POPCORN gpu MI355X\n"
MOE_SMALL = "dhidden=256,dexpert=256,nroutedexperts=4,nexpertspertoken=2,nsharedexperts=1,bs=4,seed=3"

# what a forger patches at import time: the old in-worker check, torch's comparisons and byte
# access, hashing, the JSON writer, and submitgen's own fingerprint and runner
PATCHES = (
    "import __main__\nimport hashlib\nimport json\n"
    "import submitgen.evaluate.digest as _d\n\n"
    "__main__.input_mutations = lambda *a, **k: []\n"
    "__main__.mutations = lambda *a, **k: []\n"
    "torch.equal = lambda *a, **k: True\n"
    "torch.Tensor.numpy = lambda self, *a, **k: torch.zeros(1, dtype=torch.uint8).numpy()\n"
    "torch.Tensor.clone = lambda self, *a, **k: self\n"
    "_real_sha = hashlib.sha256\n"
    "hashlib.sha256 = lambda *a, **k: _real_sha(b'')\n"
    "_d.changed = lambda *a, **k: []\n"
    "_d.make_fingerprint = lambda: (lambda data: {'structure': '0' * 64, 'tensors': []})\n"
    "__main__.make_fingerprint = _d.make_fingerprint\n"
    "__main__.make_runner = None\n"
    "_dumps = json.dumps\n"
    "json.dumps = lambda obj, *a, **k: _dumps({**obj, 'digests': obj.get('digests')} "
    "if isinstance(obj, dict) else obj, *a, **k)\n\n\n"
)


pytestmark = pytest.mark.usefixtures("toy_problems")


@pytest.mark.slow
def test_moe_writing_hidden_states_and_patching_the_check_fails(tmp_path):
    """The issue's case: a right moe output, hidden_states written into, the old in-worker check
    and torch.equal patched."""
    sub = tmp_path / "sub.py"
    sub.write_text(MOE_HEADER + "import __main__\n\nimport torch\n\n"
                   "__main__.input_mutations = lambda *a, **k: []\n"
                   "torch.equal = lambda *a, **k: True\n\n"
                   + get_problem("moe-mxfp4").fallback_source
                   + "\n\ndef custom_kernel(data):\n    out = _sg_fallback(data)\n"
                     "    data[0].add_(1)\n    return out\n")
    report = run_test(sub, custom=(MOE_SMALL,), lint=False)
    [r] = report.results
    assert not r.passed and r.error is None and r.mutated == ("hidden_states",), format_test_report(report)
    assert r.figures.mismatches == 0  # the output itself is right: only the write fails it
    assert format_test_report(report)[-1] == "FAILED: 1 of 1 shapes failed"


@pytest.mark.slow
def test_every_patch_at_once_still_fails_a_write_into_an_input(tmp_path):
    sub = tmp_path / "sub.py"
    sub.write_text(NOCLONE + PATCHES + "def custom_kernel(data):\n    a, b = data\n    out = a + b\n"
                   "    b.mul_(2)\n    return out\n")
    report = run_test(sub, custom=("n=64,seed=1", "n=96,seed=2"), lint=False)
    first, second = report.results
    assert (first.passed, first.error, first.mutated) == (False, None, ("b",)), format_test_report(report)
    # the parent reads the inputs back itself, so the patched fingerprint cell hides the second
    # call's write too no longer: that shape fails for the write, as the first did
    assert (second.passed, second.error, second.mutated) == (False, None, ("b",)), format_test_report(report)


@pytest.mark.slow
def test_patches_do_not_fail_an_honest_kernel(tmp_path):
    sub = tmp_path / "sub.py"
    sub.write_text(TOY + PATCHES + "def custom_kernel(data):\n    return data[0] + data[1]\n")
    report = run_test(sub, custom=("n=64,seed=1",), lint=False)
    assert report.passed, format_test_report(report)


@pytest.mark.slow
def test_other_inputs_than_the_parent_generates_fail(tmp_path):
    """A submission that makes the worker generate easier inputs (here: zeros, through torch.randn,
    which the problem's generate_input calls) is caught by the fingerprint sent before the call."""
    sub = tmp_path / "sub.py"
    sub.write_text(TOY + "torch.randn = lambda shape, **k: torch.zeros(shape, device=k.get('device'))\n\n\n"
                   "def custom_kernel(data):\n    return torch.zeros_like(data[0])\n")
    report = run_test(sub, custom=("n=64,seed=1",), lint=False)
    [r] = report.results
    assert not r.passed
    assert r.error == ("custom_kernel was given other inputs than submitgen generates for this shape (a, b): "
                       "something in the submission's process changed how the inputs are made")


@pytest.mark.slow
def test_a_second_inputs_event_is_refused(tmp_path):
    """The fingerprint sent before the call cannot be replaced from inside the call."""
    sub = tmp_path / "sub.py"
    sub.write_text(NOCLONE + "import json\n\nfrom submitgen.evaluate.digest import make_fingerprint\n\n"
                   "_FP = make_fingerprint()\n\n\n"
                   "def custom_kernel(data):\n"
                   "    line = json.dumps({'event': 'inputs', 'index': 0, 'digests': _FP(data)}) + '\\n'\n"
                   "    os.write(int(os.environ['SUBMITGEN_RESULT_FD']), line.encode())\n"
                   "    return data[0] + data[1]\n")
    report = run_test(sub, custom=("n=64,seed=1",), lint=False)
    [r] = report.results
    assert r.error.splitlines()[0] == (
        "the result pipe carried a malformed event (a second 'inputs' event for shape 0): something in "
        "the submission's process wrote to it")


@pytest.mark.slow
def test_a_forged_result_event_fails_the_whole_run(tmp_path):
    """A submission that writes a complete result for its shape (pristine fingerprint, right output
    bytes) before the worker's own: the worker's event then arrives second, and no result of the
    run stands."""
    sub = tmp_path / "sub.py"
    sub.write_text(NOCLONE + "import json\nimport sys\n\n"
                   "from submitgen.evaluate.digest import make_fingerprint\n\n"
                   "_FP = make_fingerprint()\n_OUT = json.load(open(sys.argv[1]))['outputs']\n\n\n"
                   "def custom_kernel(data):\n"
                   "    clean = _FP(data)\n"
                   "    out = data[0] + data[1]\n"
                   "    data[1].mul_(2)\n"
                   "    open(_OUT + '/out-0.bin', 'wb').write(out.numpy().tobytes())\n"
                   "    line = json.dumps({'event': 'output', 'index': 0, 'digests': clean,\n"
                   "                       'output': {'dtype': 'float32', 'shape': [64]}}) + '\\n'\n"
                   "    os.write(int(os.environ['SUBMITGEN_RESULT_FD']), line.encode())\n"
                   "    return out\n")
    report = run_test(sub, custom=("n=64,seed=1",), lint=False)
    [r] = report.results
    assert not r.passed
    assert r.error == ("the result pipe carried a malformed event (a 'output' event for shape 0, which "
                       "already has its result): something in the submission's process wrote to it during "
                       "this run, so no result of the run stands")


def test_replacing_the_workers_after_call_fingerprint_still_fails_a_write(tmp_path):
    """The worker's own functions are bound before the import, but a closure cell can be reassigned
    from inside custom_kernel: here the fingerprint the worker takes after the call is replaced by
    one of the inputs before the write. The parent reads the CPU inputs' bytes itself, from the
    worker's memory, after the call, so the write into b is still seen."""
    sub = tmp_path / "sub.py"
    sub.write_text(NOCLONE + "import gc\nimport sys\n\n\n"
                   "def custom_kernel(data):\n"
                   "    call = next(f for f in gc.get_referrers(sys._getframe(1).f_code) if callable(f))\n"
                   "    cells = dict(zip(call.__code__.co_freevars, call.__closure__))\n"
                   "    clean = cells['fingerprint'].cell_contents(data)\n"
                   "    out = data[0] + data[1]\n"
                   "    data[1].mul_(2)\n"
                   "    cells['fingerprint'].cell_contents = lambda d: clean\n"
                   "    return out\n")
    report = run_test(sub, custom=("n=64,seed=1", "n=96,seed=2"), lint=False)
    first, second = report.results
    assert (first.passed, first.error, first.mutated) == (False, None, ("b",)), format_test_report(report)
    # the patched cell also serves the fingerprint sent before the next call: other inputs, seen
    assert not second.passed and second.error.startswith("custom_kernel was given other inputs")
