"""The parent's own read-back of the inputs after the call (submitgen/evaluate/readback.py, and
cudaipc.py for CUDA tensors), on a machine without a GPU: the CUDA region's form and its checks,
its digest against the worker's fingerprint of the same tensor, and the shape failing whenever the
parent cannot read a CUDA input itself. tests/hostile/test_evaluate_gpu_readback.py runs the real
CUDA IPC path where torch sees a CUDA device."""

from __future__ import annotations

import hashlib
import json
import os
import queue
from types import SimpleNamespace

import pytest
import torch
import toy_problem

from submitgen.evaluate import cudaipc, process, readback
from submitgen.evaluate.check import Assessor
from submitgen.evaluate.digest import make_fingerprint

PID = os.getpid()
EMPTY = hashlib.sha256(b"").hexdigest()


def fake_share(storage):
    """What ``UntypedStorage._share_cuda_`` returns (device, handle, storage bytes, offset in the
    allocation, ref counter, its offset, event handle, event sync), for a CPU storage."""
    return (0, b"\x01r" + bytes(range(64)), storage.nbytes(), 512, f"/torch_{PID}_1234567_8".encode(), 7,
            bytes(64), True)


def cuda_region(**changes):
    region = cudaipc.make_export(share=fake_share)(torch.arange(12, dtype=torch.float32).reshape(3, 4).t())
    return {**region, **changes}


TENSORS = {
    "contiguous": lambda: torch.randn(5, 7),
    "transposed": lambda: torch.randn(5, 7).t(),
    "slice with an offset": lambda: torch.arange(100, dtype=torch.int16)[13:61:3],
    "column": lambda: torch.randn(6, 9)[:, 4],
    "expanded (stride 0)": lambda: torch.randn(3, 1).expand(3, 5),
    "0-d": lambda: torch.tensor(3.5, dtype=torch.float64),
    "bool": lambda: torch.rand(4, 4) > 0.5,
    "bfloat16 channels_last": lambda: torch.randn(2, 3, 4, 5).to(torch.bfloat16).to(
        memory_format=torch.channels_last),
    "complex64 narrow": lambda: torch.randn(4, 6, dtype=torch.complex64).narrow(1, 2, 3),
    "uint8 permuted": lambda: torch.randint(0, 255, (3, 4, 5), dtype=torch.uint8).permute(2, 0, 1),
}


@pytest.mark.parametrize("name", list(TENSORS))
def test_a_cuda_region_digest_equals_the_workers_fingerprint(name):
    """The region the worker exports (offset, shape, strides, element size), opened and hashed as
    the parent does, gives the digest the worker's fingerprint gives the same tensor: an unchanged
    input reads back equal, contiguous or not (a CPU storage stands for the opened GPU one)."""
    t = TENSORS[name]()
    region = cudaipc.make_export(share=fake_share)(t)
    assert readback.valid_regions([region], 1), region
    assert region["offset"] == t.storage_offset() * t.element_size()
    mine = cudaipc.read(region, PID, "input tensor 0", opener=lambda r: t.untyped_storage())
    assert mine == make_fingerprint()((t,))["tensors"][0]


def test_a_changed_byte_changes_the_digest():
    t = torch.randn(8, 8)[::2, 1:]
    region = cudaipc.make_export(share=fake_share)(t)
    before = cudaipc.read(region, PID, "x", opener=lambda r: t.untyped_storage())
    t[3, 6] += 1
    assert cudaipc.read(region, PID, "x", opener=lambda r: t.untyped_storage()) != before
    t.untyped_storage()[0] = 99  # outside the view: not part of the tensor
    assert cudaipc.read(region, PID, "x", opener=lambda r: t.untyped_storage()) == \
        make_fingerprint()((t,))["tensors"][0]


def test_the_export_sends_torchs_share_hex_encoded():
    region = cuda_region()
    assert region == {
        "kind": "cuda", "device": 0, "handle": (b"\x01r" + bytes(range(64))).hex(), "storage_nbytes": 48,
        "storage_offset": 512, "ref_counter": f"/torch_{PID}_1234567_8".encode().hex(),
        "ref_counter_offset": 7, "event": "00" * 64, "event_sync": True, "offset": 0, "shape": [4, 3],
        "strides": [1, 4], "itemsize": 4}
    assert json.loads(json.dumps(region)) == region


def test_an_empty_cuda_tensor_needs_nothing_shared():
    shared = []
    export = cudaipc.make_export(share=lambda s: shared.append(s))
    empty = torch.empty((3, 0))
    assert export(empty) == [0, 0] and not shared
    assert readback.read_regions(PID, [[0, 0]]) == [EMPTY] == make_fingerprint()((empty,))["tensors"]


def test_a_storage_torch_cannot_share_is_a_region_that_fails_the_read():
    def refuse(storage):
        raise RuntimeError("CUDA error: operation not supported\nCUDA kernel errors might be reported")

    region = cudaipc.make_export(share=refuse)(torch.ones(4))
    assert region == {"kind": "cuda", "device": None,
                      "error": "RuntimeError: CUDA error: operation not supported"}
    region["device"] = 0  # a CPU tensor's device has no index; a CUDA tensor's has
    assert readback.valid_regions([region], 1)
    with pytest.raises(readback.ReadBackError) as e:
        readback.read_regions(PID, [None, region])
    assert str(e.value) == ("the worker could not share input tensor 1 (cuda:0) through CUDA IPC: "
                            "RuntimeError: CUDA error: operation not supported")


MALFORMED = {
    "another kind": {"kind": "rocm"},
    "a bool device": {"device": True},
    "a device out of range": {"device": 1024},
    "an uppercase handle": {"handle": "0A" * 33},
    "an odd-length handle": {"handle": "abc"},
    "an empty handle": {"handle": ""},
    "a handle too long": {"handle": "00" * (cudaipc.MAX_HANDLE_BYTES + 1)},
    "a short event handle": {"event": "00" * 63},
    "a bytes-like event": {"event": [0] * 64},
    "an int event_sync": {"event_sync": 1},
    "a ref counter not torch's": {"ref_counter": b"/dev/shm/other".hex()},
    "a ref counter with a NUL": {"ref_counter": f"/torch_{PID}_1_2\x00x".encode().hex()},
    "a ref counter offset past the file": {"ref_counter_offset": cudaipc.REF_COUNTER_SLOTS},
    "a negative ref counter offset": {"ref_counter_offset": -1},
    "a negative offset": {"offset": -4},
    "a tensor past its storage": {"offset": 4},
    "a storage of no bytes": {"storage_nbytes": 0},
    "a float storage size": {"storage_nbytes": 48.0},
    "shape and strides of other lengths": {"strides": [1]},
    "an empty dimension (the [0, 0] form)": {"shape": [4, 0]},
    "a bool in the shape": {"shape": [4, True]},
    "a negative stride": {"strides": [1, -4]},
    "a zero itemsize": {"itemsize": 0},
    "an itemsize of 17": {"itemsize": 17},
    "too many dims": {"shape": [1] * 65, "strides": [1] * 65},
    "more than the bound of bytes": {"shape": [1 << 39, 3], "strides": [0, 0], "storage_nbytes": 1 << 40},
    "an extra key": {"address": 0},
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_malformed_cuda_region_is_refused(name):
    assert readback.valid_regions([cuda_region()], 1)
    changes = MALFORMED[name]
    assert not readback.valid_regions([cuda_region(**changes)], 1)
    [key] = list(changes)[:1]
    fault = cudaipc.fault(cuda_region(**changes))
    if name not in ("a tensor past its storage", "shape and strides of other lengths", "another kind",
                    "more than the bound of bytes", "an extra key"):
        assert fault.startswith(f"a CUDA region with {key} {changes[key]!r}"[:40]), fault
        assert "(expected " in fault, fault


def test_what_is_wrong_with_a_cuda_region_is_named():
    assert cudaipc.fault(cuda_region(offset=4)) == (
        "a CUDA region whose tensor reaches byte 52 of a storage of 48")
    assert cudaipc.fault(cuda_region(address=0)) == "a CUDA region with the extra keys ['address']"
    region = cuda_region(address=0)
    del region["event"]
    assert cudaipc.fault(region) == "a CUDA region with the extra keys ['address'] and without ['event']"
    assert cudaipc.fault(cuda_region(strides=[1])) == (
        "a CUDA region with 2 dims in its shape and 1 in its strides")
    assert cudaipc.fault(cuda_region(event_sync=1)) == (
        "a CUDA region with event_sync 1 (expected true or false)")
    assert readback.regions_fault([cuda_region()], 2) == (
        "1 regions (expected a list of 2, one for each tensor of the fingerprint)")
    assert readback.regions_fault([None, [1, -1]], 2) == (
        "region 1: '[1, -1]' (expected [address, nbytes] of at most 1,099,511,627,776 bytes, a CUDA "
        "region or null)")


def test_a_cuda_region_missing_a_key_or_a_malformed_error_form_is_refused():
    for key in cuda_region():
        region = cuda_region()
        del region[key]
        assert not readback.valid_regions([region], 1), key
    assert not readback.valid_regions([{"kind": "cuda", "device": 0, "error": 3}], 1)
    assert not readback.valid_regions([{"kind": "cuda", "device": 0, "error": "x" * 301}], 1)
    assert not readback.valid_regions([{"kind": "cuda", "device": 0, "error": "x", "handle": "00"}], 1)
    assert readback.valid_regions([{"kind": "cuda", "device": 0, "error": "x" * 300}], 1)


def test_a_ref_counter_of_another_process_is_not_opened():
    opened = []
    region = cuda_region(ref_counter=b"/torch_1_2_3".hex())
    assert readback.valid_regions([region], 1)
    with pytest.raises(readback.ReadBackError) as e:
        cudaipc.read(region, PID, "input tensor 2", opener=opened.append)
    assert str(e.value) == (f"the region of input tensor 2 (cuda:0) names the ref counter of process 1, not "
                            f"the worker's (process {PID})")
    assert not opened


def test_a_handle_that_opens_nothing_fails_the_read():
    def invalid(region):
        raise RuntimeError("CUDA error: invalid resource handle\nCompile with `TORCH_USE_CUDA_DSA`")

    with pytest.raises(readback.ReadBackError) as e:
        readback.read_regions(PID, [cuda_region()], read_cuda=lambda r, pid, what: cudaipc.read(
            r, pid, what, opener=invalid))
    assert str(e.value) == ("cannot open input tensor 0 (cuda:0) in the worker's GPU memory: RuntimeError: "
                            "CUDA error: invalid resource handle")


def _worker(tmp_path):
    return process._Worker(SimpleNamespace(proc=SimpleNamespace(pid=PID)), queue.Queue(), tmp_path / "log",
                           tmp_path, [SimpleNamespace(label="n=64")])


def test_a_malformed_cuda_region_on_the_pipe_is_a_malformed_event(tmp_path):
    w, state = _worker(tmp_path), process.RunState()
    fp = make_fingerprint()(toy_problem.generate_input({"n": 64, "seed": 1}))
    process._handle(w, state, process.parse_event(json.dumps({"event": "shape-start", "index": 0}), 1), None)
    line = json.dumps({"event": "inputs", "index": 0, "digests": fp,
                       "regions": [cuda_region(), cuda_region(ref_counter_offset=1 << 20)]})
    with pytest.raises(process.Malformed) as e:
        process._handle(w, state, process.parse_event(line, 1), None)
    assert str(e.value) == ("an 'inputs' event with region 1: a CUDA region with ref_counter_offset 1048576 "
                            "(expected an int from 0 to 9999)")


def test_a_cuda_region_in_a_parent_without_cuda_fails_the_shape(tmp_path, monkeypatch):
    """The worker's pipe carries a CUDA region (here a stand-in's); the parent, whose torch sees no
    CUDA device, cannot open it: the shape fails, never judged on the worker's own fingerprint
    (which says nothing changed)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    spec = {"n": 64, "seed": 1}
    data = toy_problem.generate_input(spec)
    fp = make_fingerprint()(data)
    (tmp_path / "out-0.bin").write_bytes((data[0] + data[1]).numpy().tobytes())
    w, state = _worker(tmp_path), process.RunState()
    judged = []

    def on_result(index, ev, out):
        judged.append(Assessor(toy_problem.PROBLEM)(spec, ev, out))

    events = [{"event": "shape-start", "index": 0},
              {"event": "inputs", "index": 0, "digests": fp, "regions": [cuda_region(), [0, 0]]},
              {"event": "output", "index": 0, "output": {"dtype": "float32", "shape": [64]}, "seconds": 0.1,
               "digests": fp, "backend": None}]
    for ev in events:
        assert not process._handle(w, state, process.parse_event(json.dumps(ev), 1), on_result)
    [assessment] = judged
    assert assessment.error == (
        "the inputs could not be read back from the worker after the call (cannot open input tensor 0 "
        "(cuda:0) in the worker's GPU memory: torch in submitgen's own process sees no CUDA device), so "
        "whether custom_kernel changed them is unknown")


def test_cpu_regions_still_read_from_proc(tmp_path):
    """The CPU reader beside the CUDA one: bytes of this process's own memory, and an address that
    is not mapped fails with the reader's words."""
    t = torch.randn(33)
    [region] = readback.make_regions()((t,))
    assert readback.read_regions(PID, [region, None]) == [make_fingerprint()((t,))["tensors"][0], None]
    with pytest.raises(readback.ReadBackError) as e:
        readback.read_regions(PID, [[8, 16]])
    assert str(e.value) == "Input/output error"


def test_the_workers_ref_counter_files_are_removed_after_it(tmp_path):
    """Torch makes a ref-counter file in /dev/shm for the worker's shares, and the worker ends by
    os._exit or SIGKILL, which unlink nothing: the parent removes the files its pid names, no other."""
    mine, other = cuda_region(), cuda_region(ref_counter=b"/torch_1_2_3".hex())
    failed = {"kind": "cuda", "device": 0, "error": "x"}
    names = cudaipc.ref_counter_names([mine, None, [0, 0], other, failed], PID)
    assert names == {f"/torch_{PID}_1234567_8"}
    for name in (f"torch_{PID}_1234567_8", "torch_1_2_3"):
        (tmp_path / name).write_bytes(bytes(8))
    cudaipc.remove_ref_counters(names | {f"/torch_{PID}_9_9"}, shm=str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["torch_1_2_3"]
