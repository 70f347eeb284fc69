"""Reading ``.npz`` archives that may come from anywhere: nothing is allocated or inflated
before its size is known and under a cap.

``np.load`` trusts the archive: it inflates whatever a member holds (a 1.5 MB member can
inflate to gigabytes) and allocates whatever shape an array header declares before reading a
byte of data. Here every member's declared size is checked against ``max_bytes`` first, every
array header is read on its own (``np.lib.format.read_magic`` + ``read_array_header_*``) and
checked -- dtype kind, dimensions, bytes implied by the shape equal to the bytes the member
holds -- and only then is the data read, never through pickle. Errors name the file and the
field.
"""

from __future__ import annotations

import math
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from grapher_core.errors import InputFileNotFoundError, SidecarError

__all__ = ["DEFAULT_MAX_NPZ_BYTES", "ArraySpec", "read_npz"]

DEFAULT_MAX_NPZ_BYTES = 4 * 1024**3
"""Most bytes the arrays of one archive may hold once inflated (4 GiB: a million 384-d float32
vectors need 1.5 GiB); pass ``max_bytes`` to raise or lower it."""

_KIND_NAMES = {"f": "float", "i": "int", "u": "unsigned int", "U": "unicode text", "b": "bool"}


@dataclass(frozen=True)
class ArraySpec:
    """What one field must be: dtype kinds accepted (``"f"``, ``"iu"``, ``"U"``) and ``ndim``."""

    kinds: str
    ndim: int


def _fail(path: Path, field: str | None, message: str) -> SidecarError:
    where = f"{path}: field {field!r}" if field else str(path)
    return SidecarError(f"{where}: {message}")


def read_npz(
    path: str | Path,
    fields: Mapping[str, ArraySpec],
    *,
    optional: frozenset[str] = frozenset(),
    max_bytes: int = DEFAULT_MAX_NPZ_BYTES,
    check_shapes: Callable[[Mapping[str, tuple[int, ...]], Callable[[str], np.ndarray]], None]
    | None = None,
) -> dict[str, np.ndarray]:
    """The arrays of ``path``, each checked against ``fields`` before it is read.

    Every name of ``fields`` must be present unless listed in ``optional``; a member not in
    ``fields`` is refused too (another layout). Every header is read and checked before any
    data; ``check_shapes(shapes, read)`` then sees every shape and may read a small member
    first (``read(name)``) to check the shapes against it, and raise. Arrays come back
    read-only, in native byte order. Raises :class:`~grapher_core.errors.SidecarError` naming
    the file and the field.
    """
    path = Path(path)
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise SidecarError(f"max_bytes must be a positive integer, got {max_bytes!r}")
    if path.is_dir():
        raise _fail(path, None, "is a directory, expected an .npz file")
    if not path.is_file():
        raise InputFileNotFoundError(f"{path} does not exist")
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
        raise _fail(path, None, f"not an .npz archive ({error})") from None
    with archive:
        members: dict[str, zipfile.ZipInfo] = {}
        for info in archive.infolist():
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            if name not in fields:
                raise _fail(path, name, f"unexpected member (expected: {', '.join(fields)})")
            if name in members:
                raise _fail(path, name, "appears twice in the archive")
            members[name] = info
        missing = [name for name in fields if name not in members and name not in optional]
        if missing:
            raise _fail(path, missing[0], "missing")
        declared = sum(info.file_size for info in members.values())
        if declared > max_bytes:
            raise _fail(
                path,
                None,
                f"declares {declared:,} bytes once inflated, more than the cap of {max_bytes:,} "
                "(max_bytes)",
            )
        headers = {
            name: _read_member(path, name, archive, info, fields[name], data=False)[0]
            for name, info in members.items()
        }
        loaded: dict[str, np.ndarray] = {}

        def read(name: str) -> np.ndarray:
            if name not in loaded:
                info = members[name]
                loaded[name] = _read_member(path, name, archive, info, fields[name], data=True)[1]
            return loaded[name]

        if check_shapes is not None:
            check_shapes({name: header[0] for name, header in headers.items()}, read)
        return {name: read(name) for name in members}


_Header = tuple[tuple[int, ...], bool, np.dtype]


def _read_member(
    path: Path,
    name: str,
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    spec: ArraySpec,
    *,
    data: bool,
) -> tuple[_Header, np.ndarray]:
    """The member's checked header and, with ``data``, its array (else an empty one)."""
    try:
        with archive.open(info) as handle:
            shape, fortran, dtype = header = _header(path, name, handle)
            _check_header(path, name, spec, shape, dtype)
            size = math.prod(shape) * dtype.itemsize
            held = info.file_size - handle.tell()
            if size != held:
                raise _fail(
                    path,
                    name,
                    f"header declares shape {shape} of {dtype} ({size:,} bytes) but the member "
                    f"holds {held:,}",
                )
            if not data:
                return header, np.zeros(0)
            raw = handle.read(size)
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError) as error:
        raise _fail(path, name, f"damaged ({error})") from None
    if len(raw) != size:
        raise _fail(path, name, f"truncated: {len(raw):,} of {size:,} bytes")
    array = np.frombuffer(raw, dtype=dtype).reshape(shape, order="F" if fortran else "C")
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    array.flags.writeable = False
    return header, array


def _header(path: Path, name: str, handle: IO[bytes]) -> tuple[tuple[int, ...], bool, np.dtype]:
    """``(shape, fortran_order, dtype)`` of one ``.npy`` member; its data not read yet."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(handle)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(handle)
        elif version == (2, 0):
            shape, fortran, dtype = fmt.read_array_header_2_0(handle)
        else:
            raise _fail(path, name, f"unsupported .npy format version {version}")
    except SidecarError:
        raise
    except (ValueError, TypeError, SyntaxError, EOFError) as error:
        raise _fail(path, name, f"not a .npy array ({error})") from None
    return tuple(shape), bool(fortran), np.dtype(dtype)


def _check_header(
    path: Path, name: str, spec: ArraySpec, shape: tuple[int, ...], dtype: np.dtype
) -> None:
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
        raise _fail(path, name, f"dtype {dtype} is not a plain {_kinds(spec.kinds)} array")
    if dtype.kind not in spec.kinds:
        raise _fail(
            path, name, f"dtype {dtype} ({_kinds(dtype.kind)}), expected {_kinds(spec.kinds)}"
        )
    if len(shape) != spec.ndim:
        raise _fail(path, name, f"shape {shape} has {len(shape)} dimensions, expected {spec.ndim}")
    if any(not isinstance(n, int) or n < 0 for n in shape):
        raise _fail(path, name, f"shape {shape} is not a shape")


def _kinds(kinds: str) -> str:
    return " or ".join(_KIND_NAMES.get(kind, kind) for kind in kinds)
