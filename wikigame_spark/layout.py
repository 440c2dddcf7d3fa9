"""Where everything lives in a graph directory: the one module that knows the layout.

Every reader and writer takes its paths from here, so a table or cache moves by changing one line
(compare datatrove's ``DataFolder``). The layout, ``GRAPH`` being a :class:`GraphDir`::

    GRAPH/manifest.json                     what built the graph (``MANIFEST`` in every output)
    GRAPH/nodes  GRAPH/edges  GRAPH/redirects   the graph's tables (Parquet)
    GRAPH/games/games  + manifest.json      games (jobs/sample_games.py; any games folder: GamesDir)
    GRAPH/stats/                            graph statistics (jobs/graph_stats.py)
    GRAPH/plays/RUN/part-NNNNNN/plays       a play run's chunks, each with its manifest; the run's
    GRAPH/plays/RUN/manifest.json           manifest once it is finished (any plays folder: PlaysDir)
    GRAPH/human/RUN/journal.jsonl           a human play run's journal (jobs/human_play.py)
    GRAPH/cache/embeddings/MODEL/TEXT-PROMPT/vectors   per-node embeddings (agents/embedding_cache.py)
    GRAPH/cache/embeddings/MODEL/TEXT-PROMPT/mapped    the same as one float32 matrix (graph/mapped.py)
    GRAPH/cache/mapped/graph                  the graph's files the play stage maps (graph/mapped.py)
    GRAPH/cache/tfidf/CORPUS-nSIZE-seedSEED/vocab       a TF-IDF vocabulary (agents/tfidf.py)

Games, plays and caches may live elsewhere (``--games-dir``, ``--output``, ``--cache-dir``): the
folder objects below name what is inside such a folder wherever it is.
"""

from __future__ import annotations

from dataclasses import dataclass

MANIFEST = "manifest.json"
# Table folders (each a Parquet table of the schema of the same name in ``schemas``) and the
# folders that hold outputs.
NODES_TABLE, EDGES_TABLE, REDIRECTS_TABLE = "nodes", "edges", "redirects"
GAMES_TABLE = "games"  # inside a games folder
PLAYS_TABLE = "plays"  # inside a play run's chunk
GAMES_FOLDER = "games"  # a graph's default games folder
PLAYS_FOLDER = "plays"  # a graph's folder of play runs
CHUNK_PREFIX = "part-"
JOURNAL = "journal.jsonl"
VECTORS = "vectors"
VOCAB = "vocab"


def join(directory: str, *names: str) -> str:
    """``directory/name/…`` for any store's paths (local, ``s3a://``, ``dbfs:/``…)."""
    return "/".join([directory.rstrip("/"), *names])


def manifest(directory: str) -> str:
    """The manifest of an output folder (its presence marks the output finished)."""
    return join(directory, MANIFEST)


@dataclass(frozen=True)
class GamesDir:
    """A games folder: the games table and its manifest."""

    root: str

    @property
    def games(self) -> str:
        return join(self.root, GAMES_TABLE)


class PlaysDir:
    """The names inside a play run's folder: chunks ``part-NNNNNN`` (each a ``plays`` table and a
    manifest) and, when the run is finished, its own manifest."""

    CHUNKS = f"{CHUNK_PREFIX}*"  # every chunk folder (a glob; staging names start with a dot and do not match)

    @staticmethod
    def chunk_name(number: int) -> str:
        return f"{CHUNK_PREFIX}{number:06d}"

    @staticmethod
    def is_chunk(name: str) -> bool:
        return name.startswith(CHUNK_PREFIX)

    @staticmethod
    def plays(chunk: str) -> str:
        """The plays table of a chunk folder."""
        return join(chunk, PLAYS_TABLE)


@dataclass(frozen=True)
class CacheDir:
    """Derived data an agent keeps between runs (rebuilt when its source graph is rebuilt)."""

    root: str

    def embeddings(self, model_slug: str, text_column: str, prompt_name: str | None) -> str:
        return join(self.root, "embeddings", model_slug, f"{text_column}-{prompt_name or 'noprompt'}")

    def tfidf(self, corpus_slug: str, sample_size: int, seed: int) -> str:
        return join(self.root, "tfidf", f"{corpus_slug}-n{sample_size}-seed{seed}")

    @staticmethod
    def vectors(cache: str) -> str:
        return join(cache, VECTORS)

    @staticmethod
    def vocab(cache: str) -> str:
        return join(cache, VOCAB)

    @property
    def centrality(self) -> str:
        """Every node's PageRank and in-degree (:mod:`wikigame_spark.graph.centrality`)."""
        return join(self.root, "centrality")

    @property
    def mapped_graph(self) -> str:
        """The graph's files that every Python worker maps while playing."""
        return join(self.root, "mapped", "graph")

    @staticmethod
    def mapped_matrix(cache: str) -> str:
        """An embedding cache's vectors as one matrix file (inside it: rebuilt with it)."""
        return join(cache, "mapped")

    @staticmethod
    def of_mapped_matrix(uri: str) -> str:
        """The embedding cache a :meth:`mapped_matrix` is inside."""
        return uri.rstrip("/").rsplit("/", 1)[0]


@dataclass(frozen=True)
class GraphDir:
    """A graph directory: its tables, and the default places of what is derived from it."""

    root: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", self.root.rstrip("/"))

    @property
    def manifest(self) -> str:
        return manifest(self.root)

    @property
    def nodes(self) -> str:
        return join(self.root, NODES_TABLE)

    @property
    def edges(self) -> str:
        return join(self.root, EDGES_TABLE)

    @property
    def games(self) -> str:
        """The default games folder (a :class:`GamesDir`)."""
        return join(self.root, GAMES_FOLDER)

    @property
    def stats(self) -> str:
        return join(self.root, "stats")

    def plays(self, run_name: str) -> str:
        """The default folder of a play run (a :class:`PlaysDir`)."""
        return join(self.root, PLAYS_FOLDER, run_name)

    def human(self, run_name: str) -> str:
        """A human play run's own folder (its journal)."""
        return join(self.root, "human", run_name)

    @property
    def cache(self) -> str:
        """The default cache folder (a :class:`CacheDir`)."""
        return join(self.root, "cache")

    @staticmethod
    def is_graph(names: set[str]) -> bool:
        """Whether a folder listing is a graph's (the tables every graph has)."""
        return {NODES_TABLE, EDGES_TABLE} <= names
