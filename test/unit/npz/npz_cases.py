"""Test arrays shared with test_cases.h: same names, shapes and value formulas."""
import numpy as np

DTYPES = ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "bool", "uint16", "uint32",
          "uint64", "bfloat16"]


def values(dtype, n):
    i = np.arange(n, dtype=np.int64)
    if dtype == "float32":
        return (i * 0.5 - 3).astype(np.float32)
    if dtype == "float64":
        return i * 0.25 - 7
    if dtype == "float16":
        return (i * 0.5 - 4).astype(np.float16)
    if dtype == "int8":
        return ((i * 37) % 256 - 128).astype(np.int8)
    if dtype == "int16":
        return (i * 1000 - 12000).astype(np.int16)
    if dtype == "int32":
        return (i * 100000 - 1234567).astype(np.int32)
    if dtype == "int64":
        return i * 10**12 - 5
    if dtype == "uint8":
        return ((i * 29) % 256).astype(np.uint8)
    if dtype == "bool":
        return i % 3 == 0
    if dtype == "uint16":
        return (i * 2000).astype(np.uint16)
    if dtype == "uint32":
        return (i * 300000000).astype(np.uint32)
    if dtype == "uint64":
        return i.astype(np.uint64) * np.uint64(10**16)
    if dtype == "bfloat16":  # numpy has none: 2-byte void, as ml_dtypes and JAX save it
        return (i + 0x3F80).astype("<u2").view("V2")
    raise ValueError(dtype)


def cases():
    """name -> array, in the order test_cases.h lists them."""
    out = {}
    for d in DTYPES:
        out["t_" + d] = values(d, 24).reshape(2, 3, 4)
    out["scalar"] = np.array(3.5, dtype=np.float32)
    out["empty"] = np.zeros((0, 5), dtype=np.float32)
    out["vector"] = values("int64", 7)
    return out
