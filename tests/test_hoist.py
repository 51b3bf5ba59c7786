"""The one helper that gathers a rendered submission's imports (submitgen/render/hoist.py)."""

from __future__ import annotations

import pytest

from submitgen.errors import RenderError
from submitgen.render.hoist import assemble, hoist_imports


def test_imports_of_every_section_become_one_sorted_block_without_duplicates():
    text = (
        "#!POPCORN leaderboard x\n# provenance\n"
        "import torch\nimport ctypes\n\nX = 1\n\n"
        "# ---- pasted fallback ----\n"
        "import torch\nfrom math import sqrt, Tau, PI\n\n_F = torch.zeros\n\n\n"
        "def f():\n    import struct\n    return struct, sqrt, Tau, PI, ctypes\n"
        "from __future__ import annotations\n"
        "import torch.nn.functional as F\n"
    )
    out = assemble(text)
    assert out == (
        "#!POPCORN leaderboard x\n# provenance\n"
        "from __future__ import annotations\n\n"
        "import ctypes\nfrom math import PI, Tau, sqrt\n\n"
        "import torch\nimport torch.nn.functional as F\n\n"
        "X = 1\n\n"
        "# ---- pasted fallback ----\n\n"
        "_F = torch.zeros\n\n\n"
        "def f():\n    import struct\n    return struct, sqrt, Tau, PI, ctypes\n"
    )


def test_blank_lines_around_a_removed_import_keep_the_code_spacing():
    _, body = hoist_imports('"""doc"""\nimport torch\n\nimport ctypes\n\n\nclass A:\n    pass\n')
    assert body == '"""doc"""\n\n\nclass A:\n    pass\n'


def test_imports_inside_strings_and_blocks_stay():
    source = 'S = """\nimport os\n"""\ntry:\n    import numpy\nexcept ImportError:\n    numpy = None\n'
    block, body = hoist_imports(source)
    assert block == [] and body == source


@pytest.mark.parametrize(
    "source, message",
    [
        ("import os; x = 1\n", "pasted code line 1: put each import statement on lines of its own"),
        (
            "from .pack import sg_pack\n",
            "pasted code line 1: a relative import cannot be pasted into a single file",
        ),
        ("from os import *\n", "pasted code line 1: 'from os import *' cannot be hoisted; name the imports"),
        (
            "import numpy as np\nimport torch as np\n",
            "two pasted imports bind the name 'np' differently: import numpy as np and import torch as np",
        ),
    ],
)
def test_imports_that_cannot_be_hoisted_are_refused_by_name(source, message):
    with pytest.raises(RenderError) as e:
        hoist_imports(source, "pasted code")
    assert str(e.value) == message
