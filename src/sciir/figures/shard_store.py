"""Where curate's shards are written as they finish, and the manifest a crashed run resumes from.

Layout of the folder (``params:curate.shards.folder``, any fsspec path the workers can reach)::

    manifest.jsonl          one line per finished shard, then a last {"complete": true} line
    <shard key>/rows.parquet  the shard's curated rows
    <shard key>/<sample_id>.png  the standardised image of each kept panel
    <shard key>/shard.json  which run computed the shard (the run id), and its counts

A shard's key is a hash of its figures (their rows and image files' sizes and times), the settings and
the project's code, so a shard is reused only for the same input worked on by the same code. A run starts
by reading the manifest: the finished shards of this run's plan are kept (whether the last run
completed or crashed) and the rest of the folder removed, so an unchanged rerun computes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

MANIFEST = "manifest.jsonl"
ROWS = "rows.parquet"
RECORD = "shard.json"


@dataclass(frozen=True)
class ShardSummary:
    """A finished shard: its key, the run that computed it and its counts."""

    key: str
    run_id: str
    figures: int
    rows: int
    images: int


class ShardStore:
    """The shard folder: shards written by the workers, recorded in the manifest by the node."""

    def __init__(self, folder: str) -> None:
        import fsspec

        self.folder = folder.rstrip("/")
        self._fs, self._root = fsspec.core.url_to_fs(self.folder)

    def shard_path(self, key: str, name: str) -> str:
        """The path (in the folder's own spelling, URL or local) of ``name`` in shard ``key``."""
        return f"{self.folder}/{key}/{name}"

    def _local(self, *parts: str) -> str:
        return "/".join([self._root, *parts])

    def _manifest_lines(self) -> list[dict[str, Any]]:
        path = self._local(MANIFEST)
        if not self._fs.exists(path):
            return []
        text = self._fs.cat_file(path).decode("utf-8")
        # A line cut short by a crash is not a record.
        return [json.loads(line) for line in text.splitlines() if line.strip().endswith("}")]

    def begin(self, keys: Iterable[str]) -> dict[str, ShardSummary]:
        """Prepare the folder for a run of the shards ``keys``; the finished ones it can reuse."""
        wanted = set(keys)
        finished = {
            line["key"]: ShardSummary(**line)
            for line in self._manifest_lines()
            if line.get("key") in wanted and self._fs.exists(self._local(line["key"], ROWS))
        }
        self._remove_all_but(set(finished))
        self._write_manifest(finished.values())
        return finished

    def _remove_all_but(self, keep: set[str]) -> None:
        if not self._fs.exists(self._root):
            self._fs.makedirs(self._root, exist_ok=True)
            return
        for entry in self._fs.ls(self._root, detail=False):
            name = entry.rstrip("/").rsplit("/", 1)[-1]
            if name not in keep:
                self._fs.rm(entry, recursive=True)

    def _write_manifest(self, summaries: Iterable[ShardSummary]) -> None:
        text = "".join(json.dumps(asdict(summary)) + "\n" for summary in summaries)
        self._fs.pipe_file(self._local(MANIFEST), text.encode("utf-8"))

    def _append(self, line: dict[str, Any]) -> None:
        with self._fs.open(self._local(MANIFEST), "ab") as manifest:
            manifest.write((json.dumps(line) + "\n").encode("utf-8"))

    def record(self, summary: ShardSummary) -> None:
        """Note a shard finished (its rows and images are written): a rerun will not compute it again."""
        self._append(asdict(summary))

    def complete(self) -> None:
        """Note the run finished (for people reading the manifest; a rerun reuses its shards all the same)."""
        self._append({"complete": True})

    # ---- written by the worker that computes the shard

    def start_shard(self, key: str) -> None:
        self._fs.makedirs(self._local(key), exist_ok=True)

    def write_image(self, key: str, sample_id: str, png: bytes) -> str:
        path = self._local(key, f"{sample_id}.png")
        self._fs.pipe_file(path, png)
        return self.shard_path(key, f"{sample_id}.png")

    def write_rows(self, key: str, rows: Any) -> None:
        """The shard's rows (a DataFrame), written after its images: a shard with rows is whole."""
        with self._fs.open(self._local(key, ROWS), "wb") as file:
            rows.to_parquet(file, index=False)

    def write_record(self, summary: ShardSummary) -> None:
        self._fs.pipe_file(self._local(summary.key, RECORD), json.dumps(asdict(summary)).encode("utf-8"))

    # ---- read by the node once every shard is done

    def read_rows(self, key: str) -> Any:
        import pandas as pd

        with self._fs.open(self._local(key, ROWS), "rb") as file:
            return pd.read_parquet(file)

    def read_record(self, key: str) -> ShardSummary:
        return ShardSummary(**json.loads(self._fs.cat_file(self._local(key, RECORD))))
