"""``submitgen diff``: pairing, the compared fields, plan block sizes and the report."""
