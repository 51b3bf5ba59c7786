"""The leaderboard's rules on a submission file, each constant defined here once (docs/rules.md
gives the sources)."""

from __future__ import annotations

import re

BANNED_WORD = "str" + "eam"
"""The word the server greps for, any case, anywhere in the file (assembled here so that this
module passes its own check)."""

BANNED_RE = re.compile(BANNED_WORD, re.IGNORECASE)

SIZE_LIMIT = 1_000_000
"""Bytes a submission may have; the API answers HTTP 413 above this."""

PAYLOAD_LIMIT = 65_535
"""Characters: GitHub's cap on the ``workflow_dispatch`` inputs kernelbot sends."""
