"""Fingerprints of local weight folders, part of a local-model backend's identity (its cache key)."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

# Weight files up to this size are identified by content; bigger ones (a real base model's
# gigabytes) by size and modification time.
HASHED_FILE_LIMIT = 256 * 2**20


def folder_fingerprint(path: Path) -> str | None:
    """A digest of a folder's (or a file's) contents; None when it does not exist.

    Part of the backend's identity, so cached images are not reused after the weights change,
    and are reused after a deterministic retraining writes the same bytes again.
    """
    if not path.exists():
        return None
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    listing = tuple((str(f), str(f.relative_to(path)), f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    return _listing_digest(listing)


@functools.lru_cache(maxsize=32)
def _listing_digest(listing: tuple[tuple[str, str, int, int], ...]) -> str:
    """Digest of relative names and contents; files too big to read each time count by size and time.

    Memoised on the listing (path, size, modification time), so unchanged weights are read once.
    """
    digest = hashlib.sha256()
    for path, name, size, mtime_ns in listing:
        digest.update(f"{name}|{size}|".encode())
        digest.update(Path(path).read_bytes() if size <= HASHED_FILE_LIMIT else str(mtime_ns).encode())
    return digest.hexdigest()
