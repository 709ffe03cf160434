"""Reading members of a checkpoint's zip archive with bounded work, whatever the file claims.

A hostile file can declare anything: an 8 TiB array in a 700-byte member, a compressed member that
expands a thousandfold, a header of a million nested brackets. Everything here checks what a member
declares against what it holds before allocating, so loading a file of ``n`` bytes allocates at most
about ``n`` bytes (``MAX_EXPANSION * n`` for compressed members), and every refusal is a
``ValueError`` that names the file and the member and says what was expected.
"""
from __future__ import annotations

import math
import zipfile
from typing import Any

import numpy as np

NPY_MAGIC = b"\x93NUMPY"
MAX_NPY_HEADER_BYTES = 10_000  # numpy's own default limit for a .npy header
MAX_EXPANSION = 1100  # deflate cannot expand data by more than about 1032 times


class CheckpointError(ValueError):
    """A file that is not a checkpoint tinynorm can load, with a message naming it and saying why."""


def damaged(name: str, info: zipfile.ZipInfo, what: str) -> CheckpointError:
    return CheckpointError(f"load: {name!r} is damaged: its member {info.filename!r} {what}")


def check_member(info: zipfile.ZipInfo, name: str) -> None:
    """Refuse a member whose declared size its compressed bytes cannot hold."""
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise damaged(name, info, f"uses compression method {info.compress_type}; a checkpoint's members are stored "
                                  "or deflated")
    stored = info.compress_type == zipfile.ZIP_STORED
    if (stored and info.file_size != info.compress_size) or info.file_size > MAX_EXPANSION * info.compress_size + 64:
        raise damaged(name, info, f"declares {info.file_size} bytes but holds only {info.compress_size}")


def read_record(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, nbytes: int | None = None) -> bytearray:
    """A member's bytes (which must number ``nbytes`` when given), read and CRC-checked."""
    check_member(info, name)
    if nbytes is not None and nbytes != info.file_size:
        raise damaged(name, info, f"holds {info.file_size} bytes, {nbytes} expected")
    data = bytearray(info.file_size)
    with archive.open(info) as member:
        _fill(member, memoryview(data), info, name)
    return data


def read_npy(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> np.ndarray:
    """The numpy array in a ``.npy`` member, never unpickling, its declared size checked before allocating."""
    check_member(info, name)
    with archive.open(info) as member:
        magic = member.read(len(NPY_MAGIC))
        if magic != NPY_MAGIC:
            raise damaged(name, info, f"is not a .npy array (it starts with {magic!r}; a .npy array starts with "
                                      f"{NPY_MAGIC!r})")
        version = tuple(member.read(2))
        readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
        if version not in readers:
            raise damaged(name, info, f"is a .npy array of format version {version}; versions 1.0 and 2.0 are read")
        shape, fortran_order, dtype = readers[version](member, max_header_size=MAX_NPY_HEADER_BYTES)
        if dtype.hasobject:
            raise damaged(name, info, "is an array of Python objects (a pickle), which is never loaded")
        count = math.prod(shape)
        data_bytes = info.file_size - member.tell()
        if count * dtype.itemsize != data_bytes:
            raise damaged(name, info, f"declares a {dtype} array of shape {shape} ({count * dtype.itemsize} bytes) but "
                                      f"holds {data_bytes} bytes")
        flat = np.empty(count, dtype=dtype)
        _fill(member, memoryview(flat.view(np.uint8)), info, name)
    return flat.reshape(shape, order="F" if fortran_order else "C")


def _fill(member: Any, buffer: memoryview, info: zipfile.ZipInfo, name: str) -> None:
    """Fill ``buffer`` from ``member``, then read to its end, where zipfile checks the CRC."""
    filled = 0
    while filled < len(buffer):
        count = member.readinto(buffer[filled:])
        if not count:
            raise damaged(name, info, f"ends after {filled} of {len(buffer)} bytes")
        filled += count
    if member.read(1):
        raise damaged(name, info, f"holds more than {len(buffer)} bytes")
