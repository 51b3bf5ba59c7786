"""``submitgen diff`` pairing and layout on real objects (tests/corpus/aiter) and edited ones:
differently named kernels, ``--pair``, nothing compared, inserted and renamed arguments, long
names and paths at 100 columns, and each side's occupancy labelled with its own arch."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from submitgen.cli import cli

sys.path.insert(0, str(Path(__file__).parent / "hostile"))
from elfedit import with_metadata  # noqa: E402

CORPUS = Path(__file__).parent / "corpus" / "aiter" / "hsa"
TILE_A = CORPUS / "gfx950/f4gemm/f4gemm_bf16_per1x32Fp4_BpreShuffle_128x128.co"
TILE_B = CORPUS / "gfx950/f4gemm/f4gemm_bf16_per1x32Fp4_BpreShuffle_128x256.co"
GEMM_942 = CORPUS / "gfx942/bf16gemm/bf16gemm_outf32_tn_32x64_pf3.co"
GEMM_950 = CORPUS / "gfx950/bf16gemm/bf16gemm_outf32_tn_32x64_pf3.co"

TWO = r"""
extern "C" __attribute__((global)) void {a}(float* x) {{ x[0] = 1.0f; }}
extern "C" __attribute__((global)) void {b}(float* x) {{ x[1] = 2.0f; }}
"""
LONG = r"""
template <int N, typename T> __attribute__((global))
void a_kernel_with_a_rather_long_name_for_layout_checks_in_the_diff_report(T* output_values, int n) {
  if ((int)__builtin_amdgcn_workitem_id_x() < n) output_values[0] = N;
}
template __attribute__((global))
void a_kernel_with_a_rather_long_name_for_layout_checks_in_the_diff_report<1234567, float>(float*, int);
"""


def diff(*args: str):
    return CliRunner().invoke(cli, ["diff", *args], catch_exceptions=False)


def fits(out: str) -> bool:
    return all(len(line) <= 100 for line in out.splitlines())


def test_differently_named_tiles_pair_one_to_one():
    r = diff(str(TILE_A), str(TILE_B), "--json", "--fail-on", "args")
    doc = json.loads(r.output)
    assert r.exit_code == 0 and doc["compared"] == 1 and doc["added"] == [] and doc["removed"] == []
    [k] = doc["kernels"]
    assert (
        k["pairing"] == "one-to-one" and k["old_name"].endswith("128x128E") and k["name"].endswith("128x256E")
    )
    r = diff(str(TILE_A), str(TILE_B))
    assert "paired one-to-one: each side holds one kernel and no name matches" in r.output
    head = next(line for line in r.output.splitlines() if line.startswith("kernel "))
    assert "128x128" in head and "128x256" in head and fits(r.output)


@pytest.fixture(scope="module")
def two_each(compile_co, tmp_path_factory):
    d = tmp_path_factory.mktemp("two")
    old, new = d / "old.co", d / "new.co"
    old.write_bytes(compile_co(TWO.format(a="alpha", b="beta")))
    new.write_bytes(compile_co(TWO.format(a="gamma", b="delta")))
    return old, new


def test_nothing_compared_is_said_and_fails_fail_on(two_each):
    old, new = two_each
    r = diff(str(old), str(new))
    assert r.exit_code == 0 and "kernels: 0 paired, 0 changed, 2 added, 2 removed" in r.output
    assert "nothing compared: no kernel of OLD pairs with one of NEW by name" in " ".join(r.output.split())
    r = diff(str(old), str(new), "--fail-on", "args")
    assert r.exit_code == 1
    assert (
        "fail-on nothing-compared: tripped: no kernel of OLD was compared with one of NEW (pair them with "
        "--pair OLD=NEW)"
    ) in " ".join(r.output.split()) and fits(r.output)
    r = diff(str(old), str(new), "--pair", "alpha=delta", "--fail-on", "args", "--json")
    doc = json.loads(r.output)
    assert r.exit_code == 0 and [(k["old_name"], k["name"], k["pairing"]) for k in doc["kernels"]] == \
        [("alpha", "delta", "--pair")]
    assert doc["added"] == ["gamma"] and doc["removed"] == ["beta"]
    r = diff(str(old), str(new), "--pair", "nope=delta")
    assert (
        r.exit_code == 1
        and r.output == "Error: --pair: no kernel named 'nope' in OLD; it has 'alpha', 'beta'\n"
    )
    r = diff(str(old), str(new), "--pair", "alpha")
    assert (
        r.exit_code == 1 and r.output == "Error: --pair: expected OLD=NEW (two kernel names), got 'alpha'\n"
    )


def _insert_arg(doc):
    k = doc["amdhsa.kernels"][0]
    args = k[".args"]
    for a in args[3:]:
        a[".offset"] += 8
    args.insert(3, {".name": "inserted_scale", ".offset": args[2][".offset"] + 8, ".size": 8,
                    ".value_kind": "by_value"})
    k[".kernarg_segment_size"] += 8


def _rename_arg(doc):
    doc["amdhsa.kernels"][0][".args"][0][".name"] = "D_renamed"


def _long_arg_name(doc):
    doc["amdhsa.kernels"][0][".args"][0][".name"] = "an_argument_name_much_longer_than_the_label_column_" * 2
    doc["amdhsa.kernels"][0][".args"][0][".size"] = 4


@pytest.fixture(scope="module")
def edited(tmp_path_factory):
    d = tmp_path_factory.mktemp("edited")
    out = {}
    for key, edit in (("inserted", _insert_arg), ("renamed", _rename_arg), ("long", _long_arg_name)):
        out[key] = d / f"{key}.co"
        out[key].write_bytes(with_metadata(TILE_A.read_bytes(), edit))
    return out


def test_an_inserted_argument_is_one_insertion_not_eighty_changes(edited):
    r = diff(str(TILE_A), str(edited["inserted"]), "--json")
    args = json.loads(r.output)["kernels"][0]["args"]
    statuses = [a["status"] for a in args]
    assert statuses.count("inserted") == 1 and statuses.count("removed") == 0 and "changed" not in statuses
    ins = next(a for a in args if a["status"] == "inserted")
    assert ins["index"] == 3 and ins["new"]["name"] == "inserted_scale"
    assert all(a["new"]["offset"] - a["old"]["offset"] == 8 for a in args if a["status"] == "moved")
    r = diff(str(TILE_A), str(edited["inserted"]))
    lines = r.output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  arg"))
    assert lines[start:] == ["  arg 3 inserted_scale", " " * 22 + "inserted: by_value 8 B @24",
                             "  args 4..84          81 args moved by +8 B, otherwise unchanged"]
    assert fits(r.output)
    r = diff(str(TILE_A), str(edited["inserted"]), "--fail-on", "args")
    assert r.exit_code == 1 and "fail-on args: tripped: kernel" in r.output


def test_a_rename_alone_is_shown(edited):
    r = diff(str(TILE_A), str(edited["renamed"]))
    assert "arg 0 D_renamed" in r.output and "(name D -> D_renamed)" in r.output and fits(r.output)
    assert "kernels: 1 paired, 1 changed" in r.output


def test_a_long_argument_name_does_not_run_into_the_values(edited):
    r = diff(str(TILE_A), str(edited["long"]))
    lines = r.output.splitlines()
    i = next(i for i, line in enumerate(lines) if "an_argument_name_much_longer" in line)
    assert "global_buffer" not in lines[i] and "global_buffer 8 B @0 -> global_buffer 4 B @0" in lines[i + 1]
    assert lines[i + 1].startswith(" " * 22) and fits(r.output)


def test_long_paths_keep_the_part_that_differs(tmp_path):
    deep = tmp_path.joinpath(*["a_long_folder_name"] * 6)
    deep.mkdir(parents=True)
    (deep / "build_one_with_a_long_common_suffix_name.co").write_bytes(TILE_A.read_bytes())
    (deep / "build_two_with_a_long_common_suffix_name.co").write_bytes(TILE_A.read_bytes())
    r = diff(str(deep / "build_one_with_a_long_common_suffix_name.co"),
             str(deep / "build_two_with_a_long_common_suffix_name.co"))
    old = next(line for line in r.output.splitlines() if line.startswith("old  "))
    new = next(line for line in r.output.splitlines() if line.startswith("new  "))
    assert "build_one" in old and "build_two" in new and old != new and fits(r.output)


def test_a_shortened_demangled_name_keeps_its_parenthesis(compile_co, tmp_path):
    a, b = tmp_path / "a.co", tmp_path / "b.co"
    a.write_bytes(compile_co(LONG))
    b.write_bytes(compile_co(LONG.replace("output_values[0] = N", "output_values[1] = N")))
    r = diff(str(a), str(b), "--all")
    head = next(line for line in r.output.splitlines() if line.startswith("kernel "))
    assert len(head) <= 100 and "(" in head and head.endswith(")"), head


def test_cross_arch_occupancy_is_labelled_per_side():
    r = diff(str(GEMM_942), str(GEMM_950), "--json")
    k = json.loads(r.output)["kernels"][0]
    assert k["occupancy_targets"] == {"old": "gfx942", "new": "gfx950"}
    r = diff(str(GEMM_942), str(GEMM_950))
    assert "occupancy estimated for gfx942 (old) and gfx950 (new)" in r.output and fits(r.output)
