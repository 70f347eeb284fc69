"""Reading ``.npz`` archives that may come from anywhere: nothing is allocated or inflated
before its size is known, bounded and, with every copy the reader will make, under a cap.

``np.load`` trusts the archive: it inflates whatever a member holds (a 1.5 MB member can
inflate to gigabytes) and allocates whatever shape an array header declares before reading a
byte of data. Here, before any data is read:

* the zip directory: each member stored or deflated (what ``np.savez`` writes), no member
  inflating past deflate's own bound (1032:1) or, when large, past the ratio its field allows
  (real vectors barely compress; a 1 GB member from 1 MB is a bomb), compressed sizes within
  the file, inflated sizes within ``max_bytes``;
* every array header, read on its own (``np.lib.format.read_magic`` +
  ``read_array_header_*``): dtype kind, dimensions, a bound on the row width, bytes implied by
  the shape equal to the bytes the member holds;
* the working memory: each array in the dtype it is returned in, times what its caller does
  with it (``ArraySpec.cost``), against ``max_bytes``.

Only then is the data read, chunk by chunk into its final array (dtype conversion and
finiteness checked per chunk, in the stored dtype: no whole-array temporary), never through
pickle. Errors name the file and the field.
"""

from __future__ import annotations

import math
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

import numpy as np

from grapher_core.errors import InputFileNotFoundError, SidecarError

__all__ = ["DEFAULT_MAX_NPZ_BYTES", "MAX_WIDTH", "ArraySpec", "read_npz"]

DEFAULT_MAX_NPZ_BYTES = 4 * 1024**3
"""Most bytes reading one archive may hold (4 GiB), every working copy counted: a million
384-d float32 vectors returned as float64 need 3 GiB; pass ``max_bytes`` to raise or lower it."""

MAX_WIDTH = 1 << 16
"""Default bound on a row's width (every dimension after the first): 65,536, far above any
embedding (MiniLM 384, the largest models 4,096), far below one row of gigabytes."""

_DEFLATE_RATIO = 1032  # deflate cannot inflate more than this per compressed byte
_RATIO_FLOOR = 16 << 20  # members inflating to less are never refused for their ratio
_CHUNK = 4 << 20  # bytes read (and converted, and checked) per step
_KIND_NAMES = {"f": "float", "i": "int", "u": "unsigned int", "U": "unicode text", "b": "bool"}


@dataclass(frozen=True)
class ArraySpec:
    """What one field must be and what reading it may cost.

    ``kinds``: dtype kinds accepted (``"f"``, ``"iu"``, ``"U"``); ``ndim``; ``max_width``:
    bound on every dimension after the first; ``max_ratio``: most bytes a member above 16 MiB
    may inflate to per compressed byte; ``dtype``: the dtype it is returned in (converted chunk
    by chunk, integers refused when they do not fit); ``finite``: NaN and infinities refused
    (checked per chunk); ``cost``: working bytes per returned byte its caller needs afterwards
    (parsing, sorting), counted against the cap before anything is read.
    """

    kinds: str
    ndim: int
    max_width: int = MAX_WIDTH
    max_ratio: float = _DEFLATE_RATIO
    dtype: str | None = None
    finite: bool = False
    cost: float = 1.0


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
    ``fields`` is refused too (another layout). Every header is read and checked, and the
    working memory counted, before any data; ``check_shapes(shapes, read)`` then sees every
    shape and may read a small member first (``read(name)``) to check the shapes against it,
    and raise. Arrays come back read-only, in native byte order (or ``ArraySpec.dtype``).
    Raises :class:`~grapher_core.errors.SidecarError` naming the file and the field.
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
        _check_directory(path, members, fields)
        headers = {
            name: _read_member(path, name, archive, info, fields[name], data=False)[0]
            for name, info in members.items()
        }
        _check_working_memory(path, headers, fields, max_bytes)
        loaded: dict[str, np.ndarray] = {}

        def read(name: str) -> np.ndarray:
            if name not in loaded:
                info = members[name]
                loaded[name] = _read_member(path, name, archive, info, fields[name], data=True)[1]
            return loaded[name]

        if check_shapes is not None:
            check_shapes({name: header[0] for name, header in headers.items()}, read)
        return {name: read(name) for name in members}


def _check_directory(
    path: Path, members: Mapping[str, zipfile.ZipInfo], fields: Mapping[str, ArraySpec]
) -> None:
    """What the zip directory declares, against the file's size and each field's ratio."""
    compressed = 0
    for name, info in members.items():
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise _fail(
                path, name, f"compression method {info.compress_type}: expected stored or deflated"
            )
        if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
            raise _fail(
                path,
                name,
                f"stored member declares {info.file_size:,} bytes in {info.compress_size:,}",
            )
        ratio = min(float(fields[name].max_ratio), _DEFLATE_RATIO)
        bounded = info.file_size > _RATIO_FLOOR or ratio == _DEFLATE_RATIO
        if bounded and info.file_size > ratio * info.compress_size + 1024:
            raise _fail(
                path,
                name,
                f"declares {info.file_size:,} bytes inflated from {info.compress_size:,} "
                f"compressed ({info.file_size / max(info.compress_size, 1):,.0f}:1, more than "
                f"the {ratio:,.0f}:1 this field allows): refused before inflating",
            )
        compressed += info.compress_size
    size = path.stat().st_size
    if compressed > size:
        raise _fail(
            path, None, f"members declare {compressed:,} compressed bytes, the file has {size:,}"
        )


_Header = tuple[tuple[int, ...], bool, np.dtype]


def _out_dtype(spec: ArraySpec, dtype: np.dtype) -> np.dtype:
    """The dtype a field is returned in: the spec's, else the stored one in native order."""
    return np.dtype(spec.dtype) if spec.dtype is not None else dtype.newbyteorder("=")


def _check_working_memory(
    path: Path, headers: Mapping[str, _Header], fields: Mapping[str, ArraySpec], max_bytes: int
) -> None:
    """Every array as returned, times its caller's cost, plus the read buffers, under the cap."""
    parts = {
        name: math.prod(shape) * _out_dtype(fields[name], dtype).itemsize * fields[name].cost
        for name, (shape, _, dtype) in headers.items()
    }
    needed = int(sum(parts.values())) + 2 * _CHUNK  # a chunk read, and its check's temporary
    if needed > max_bytes:
        largest = max(parts, key=lambda name: parts[name])
        returned = _out_dtype(fields[largest], headers[largest][2])
        raise _fail(
            path,
            largest,
            f"reading the archive needs {needed:,} bytes of working memory "
            f"({int(parts[largest]):,} for this field as {returned}), more than the cap of "
            f"{max_bytes:,} (max_bytes)",
        )


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
            shape, _, dtype = header = _header(path, name, handle)
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
            if any(n > spec.max_width for n in shape[1:]):
                raise _fail(
                    path, name, f"shape {shape}: rows wider than {spec.max_width:,} are refused"
                )
            if not data:
                return header, np.zeros(0)
            array = _read_data(path, name, handle, header, spec)
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError) as error:
        raise _fail(path, name, f"damaged ({error})") from None
    array.flags.writeable = False
    return header, array


def _read_data(
    path: Path, name: str, handle: IO[bytes], header: _Header, spec: ArraySpec
) -> np.ndarray:
    """The data, read chunk by chunk straight into the returned array: converted, range- and
    finiteness-checked per chunk; a bad value is reported once the member's checksum passed."""
    shape, fortran, dtype = header
    order: Literal["C", "F"] = "F" if fortran else "C"
    target = _out_dtype(spec, dtype)
    out = np.empty(shape, dtype=target, order=order)
    flat = out.reshape(-1, order=order)  # a view: ``out`` is contiguous in that order
    narrowing = dtype.kind in "iu" and not np.can_cast(dtype, target, "safe")
    step = max(1, _CHUNK // max(dtype.itemsize, 1))
    problem: str | None = None
    for start in range(0, flat.size if dtype.itemsize else 0, step):
        count = min(step, flat.size - start)
        raw = handle.read(count * dtype.itemsize)
        if len(raw) != count * dtype.itemsize:
            raise _fail(
                path,
                name,
                f"truncated: ended within element {start + len(raw) // dtype.itemsize:,}",
            )
        chunk = np.frombuffer(raw, dtype=dtype)
        if problem is None and spec.finite and dtype.kind == "f":
            bad = ~np.isfinite(chunk)
            if bad.any():
                row = np.unravel_index(start + int(np.argmax(bad)), shape, order=order)[0]
                problem = f"row {int(row)} holds NaN or infinite values"
        if problem is None and narrowing and count:
            low, high = int(chunk.min()), int(chunk.max())
            limits = np.iinfo(target)
            if low < limits.min or high > limits.max:
                problem = f"value {low if low < limits.min else high} does not fit {target}"
        flat[start : start + count] = chunk
    handle.read(1)  # at the end: the checksum is checked now, before a bad value is reported
    if problem is not None:
        raise _fail(path, name, problem)
    return out


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
