"""Registers, LDS, scratch, spills, occupancy and matrix instructions of every Triton
specialization of the default projects and examples/triton_mxfp4_mm, compiled for gfx950 with the
installed Triton (statically: no MI355X is needed, or was used).

    python experiments/triton_gfx950_resources.py

Occupancy is submitgen's (submitgen.readers.amd.processors.occupancy) at the plan's block (num_warps x 64) and
dynamic LDS (Triton's ``shared``); the matrix instructions are counted in the assembly Triton
emitted for the object (``asm["amdgcn"]``), per mnemonic.
"""

from __future__ import annotations

import collections
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]  # _common lives in benchmarks/

from _common import load_module as _module  # noqa: E402

from submitgen.readers.amd import processors  # noqa: E402
from submitgen.readers.amd.reader import read_code_object  # noqa: E402

PROJECTS = (
    ROOT / "kernels" / "mxfp4_mm",
    ROOT / "kernels" / "mixed_mla",
    ROOT / "examples" / "triton_mxfp4_mm",
)


def main() -> None:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    print(f"# gfx950, triton {triton.__version__}")
    print("project specialization: kernel | VGPR (of which AGPR) | SGPR | LDS B | scratch B | spills v/s | "
          "waves/SIMD (limited by) | matrix instructions in the assembly")
    for folder in PROJECTS:
        launch = _module(folder / "launch.py", f"_res_launch_{folder.name}")
        for name, e in launch.TRITON.items():
            kmod = _module(folder / e["source"], f"_res_src_{folder.name}")
            sig = e["signature"]
            hints = {(i,): [["tt.divisibility", 16]] for i, v in enumerate(sig.values()) if v.endswith(":16")}
            src = ASTSource(
                fn=getattr(kmod, e["kernel"]),
                signature={k: v.removesuffix(":16") for k, v in sig.items()},
                constexprs=dict(e["constexprs"]),
                attrs=hints,
            )
            ck = triton.compile(src, target=GPUTarget("hip", "gfx950", 64),
                                options={"num_warps": e["num_warps"], "num_stages": e["num_stages"],
                                         **e.get("options", {})})
            (k,) = read_code_object(ck.asm["hsaco"]).kernels
            occ = processors.occupancy(k, "gfx950", e["num_warps"] * 64, dynamic_lds=ck.metadata.shared)
            mfma = collections.Counter(re.findall(r"^\s+(v_mfma\w*)", ck.asm["amdgcn"], re.MULTILINE))
            print(
                f"{folder.name} {name}: {k.name} | {k.vgpr_count} ({k.agpr_count}) | {k.sgpr_count} | "
                f"{ck.metadata.shared} | {k.private_segment_fixed_size} | "
                f"{k.vgpr_spill_count}/{k.sgpr_spill_count} | "
                f"{occ.waves_per_simd} ({','.join(occ.limited_by)}) | "
                f"{', '.join(f'{n} x{c}' for n, c in sorted(mfma.items())) or '-'}",
                flush=True,
            )


if __name__ == "__main__":
    main()
