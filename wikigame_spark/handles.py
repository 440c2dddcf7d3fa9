"""Opened inputs: a graph or games folder resolved once — path, manifest, layout, cache folder.

A job opens each input once (:mod:`wikigame_spark.runner`), after checking it is what its flag
wants, and passes the handle down: nothing reads a manifest a second time in one job. Games are
bound to the graph they were sampled on (their manifest records that graph's manifest digest).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wikigame_spark import manifests, storage
from wikigame_spark.layout import CacheDir, GraphDir
from wikigame_spark.storage import Folder


@dataclass(frozen=True)
class GraphHandle:
    """A finished graph folder as opened: where it is (and the storage that reaches it), its
    manifest, where its caches go."""

    folder: Folder
    manifest: dict
    cache_dir: str = ""  # default GRAPH/cache
    sha1: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "cache_dir", (self.cache_dir or GraphDir(self.path).cache).rstrip("/"))
        object.__setattr__(self, "sha1", manifests.manifest_sha1(self.manifest))

    @classmethod
    def open(cls, path: str, spark=None, cache_dir: str = "") -> GraphHandle:
        """The graph folder at ``path`` with its manifest (a local path needs no session)."""
        folder = storage.folder(path, spark)
        return cls(folder, manifests.read_manifest(folder), cache_dir)

    @property
    def path(self) -> str:
        return self.folder.root

    @property
    def dir(self) -> GraphDir:
        return GraphDir(self.path)

    @property
    def cache(self) -> CacheDir:
        return CacheDir(self.cache_dir)

    @property
    def name(self) -> str:
        """A short name for titles: the wiki's database name, the language, or the folder's name."""
        m = self.manifest
        return m.get("dbname") or m.get("field") or m.get("language") or self.path.rsplit("/", 1)[-1]

    def identity(self) -> dict:
        """What names this graph in the outputs derived from it: path, manifest digest, size."""
        m = self.manifest
        counts = m.get("counts", {})
        return {
            "path": self.path,
            "manifest_sha1": self.sha1,
            "kind": m.get("kind"),
            "language": m.get("language"),
            "dbname": m.get("dbname"),
            "created": m.get("created"),
            "code_version": m.get("code_version"),
            "nodes": counts.get("nodes"),
            "edges": counts.get("edges"),
        }


@dataclass(frozen=True)
class GamesHandle:
    """A finished games folder as opened, with the graph it was sampled on."""

    folder: Folder
    manifest: dict
    graph: GraphHandle
    sha1: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha1", manifests.manifest_sha1(self.manifest))

    @property
    def path(self) -> str:
        return self.folder.root

    @property
    def count(self) -> int:
        return int(self.manifest.get("games") or 0)

    @property
    def seed(self):
        return self.manifest.get("seed", "")
