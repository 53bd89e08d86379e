"""Checks that numpy reads the .npz in argv[1] (written by popc) as exactly npz_cases.cases()."""
import sys

import numpy as np

from npz_cases import cases

expected = cases()
with np.load(sys.argv[1], allow_pickle=False) as got:
    if sorted(got.files) != sorted(expected):
        sys.exit(f"keys differ: {sorted(got.files)} vs {sorted(expected)}")
    for name, want in expected.items():
        a = got[name]
        if a.dtype != want.dtype or a.shape != want.shape or not np.array_equal(a, want):
            sys.exit(f"{name}: got {a.dtype}{a.shape} {a!r}, want {want.dtype}{want.shape} {want!r}")
print("ok")
