"""Writes numpy-made test files into argv[1]: good ones (read back by npz_tests and
compared with test_cases.h) and bad ones (each must give a popc::Error)."""
import io
import os
import sys
import zipfile

import numpy as np

from npz_cases import cases

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
arrays = cases()
np.savez(os.path.join(out, "savez.npz"), **arrays)
np.savez_compressed(os.path.join(out, "savez_compressed.npz"), **arrays)
for name, a in arrays.items():
    np.save(os.path.join(out, name + ".npy"), a)

bad = os.path.join(out, "bad")
os.makedirs(bad, exist_ok=True)
f = np.arange(6, dtype=np.float32).reshape(2, 3)
np.savez(os.path.join(bad, "fortran.npz"), x=np.asfortranarray(f))
np.savez(os.path.join(bad, "object.npz"), x=np.array([1, "a", None], dtype=object))
np.savez(os.path.join(bad, "bigendian.npz"), x=f.astype(">f4"))
np.savez(os.path.join(bad, "complex64.npz"), x=f.astype(np.complex64))
np.savez(os.path.join(bad, "structured.npz"), x=np.zeros(3, dtype=[("a", "<f4"), ("b", "<i4")]))
with open(os.path.join(bad, "not_a_zip.npz"), "w") as fh:
    fh.write("hello, this is not a zip file\n" * 4)
with zipfile.ZipFile(os.path.join(bad, "not_npy_member.npz"), "w") as z:
    z.writestr("readme.txt", "not an array")
# Truncated archive: half of a valid one.
with open(os.path.join(out, "savez.npz"), "rb") as fh:
    data = fh.read()
with open(os.path.join(bad, "truncated.npz"), "wb") as fh:
    fh.write(data[: len(data) // 2])
# Member whose .npy data is shorter than its shape says.
buf = io.BytesIO()
np.save(buf, f)
with zipfile.ZipFile(os.path.join(bad, "short_data.npz"), "w") as z:
    z.writestr("x.npy", buf.getvalue()[:-4])
# Stored member with a flipped data byte: CRC mismatch.
with zipfile.ZipFile(os.path.join(bad, "bad_crc.npz"), "w") as z:
    z.writestr("x.npy", buf.getvalue())
with open(os.path.join(bad, "bad_crc.npz"), "rb") as fh:
    raw = bytearray(fh.read())
pos = raw.find(b"\x00\x00\x80\x3f")  # 1.0f in the data
raw[pos + 3] ^= 0x01
with open(os.path.join(bad, "bad_crc.npz"), "wb") as fh:
    fh.write(raw)
