"""``read_regular`` reads the size fstat gives and one byte more: a file that grows past that size
while it is read reads on to the bound, and past the bound it is refused (issue 26 item 16: the
read no longer allocates the whole bound first)."""

from __future__ import annotations

import os

import pytest

from submitgen.system import Refused, read_regular


def test_a_file_reads_whole(tmp_path):
    p = tmp_path / "f.bin"
    p.write_bytes(b"x" * 5000)
    assert read_regular(p, 5000) == b"x" * 5000


def test_a_file_over_the_bound_is_refused_before_it_is_read(tmp_path):
    p = tmp_path / "f.bin"
    p.write_bytes(b"x" * 5001)
    with pytest.raises(Refused) as e:
        read_regular(p, 5000)
    assert (e.value.reason, e.value.size, e.value.limit) == ("too-large", 5001, 5000)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc")
def test_a_file_larger_than_its_stat_size_reads_on_to_the_bound():
    # /proc files are regular with st_size 0, and hold more: what a file that grew looks like
    assert os.stat("/proc/self/status").st_size == 0
    data = read_regular("/proc/self/status", 1 << 20)
    assert data.startswith(b"Name:") and len(data) > 100


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc")
def test_a_file_that_grew_past_the_bound_is_refused():
    with pytest.raises(Refused) as e:
        read_regular("/proc/self/status", 50)
    assert (e.value.reason, e.value.limit) == ("grew", 50)


def test_a_small_file_under_a_large_bound_allocates_its_size_not_the_bound(tmp_path):
    import tracemalloc

    p = tmp_path / "f.bin"
    p.write_bytes(b"x" * 4096)
    tracemalloc.start()
    try:
        read_regular(p, 1 << 30)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # before: a buffer of the whole bound (1 GiB) for the read
