"""OpenAlex works snapshot → one symmetric citation graph per field (nodes, edges, manifest.json).

INPUT: a local folder or file, or s3://bucket/prefix (the public snapshot: s3://openalex).
Each field's graph goes to OUTPUT/<field-slug>/, e.g. OUTPUT/physics-and-astronomy/.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wikigame_spark import cli, layout, parquet
from wikigame_spark.config import OVERWRITE_HELP, ConfigError, setting
from wikigame_spark.ingest.openalex import build_graphs, check_graphs, classified_works, snapshot_has_topics
from wikigame_spark.ingest.openalex_records import FIELDS, field_slug
from wikigame_spark.ingest.openalex_snapshot import check_record_counts, plan_snapshot
from wikigame_spark.runner import Context, Input, InputKind, Job, Output, Result
from wikigame_spark.schemas import EDGES, OPENALEX_NODES
from wikigame_spark.storage import spark_uri
from wikigame_spark.stores import S3Store, configure_s3a, open_store


@dataclass(frozen=True)
class OpenAlexBuildConfig:
    """``jobs/build_openalex.py``: an OpenAlex works snapshot → one citation graph per field."""

    input: str = setting(
        "",
        "one snapshot: its folder (every part file under it) or one file, s3://bucket/prefix, or a Hadoop URI",
        required=True,
    )
    fields: tuple[str, ...] = setting(
        (), "primary-topic field, e.g. Medicine (repeat or list)", required=True, flag="--field"
    )
    output: str = setting("", "folder of the field graphs, one per field under it", required=True)
    language: str = setting(
        "",
        "language code recorded per node (nodes are not filtered; sample_games --target-language picks targets by it)",
    )
    endpoint_url: str = setting("", "S3-compatible endpoint other than AWS (path-style addressing)")
    format: str = setting(
        "auto", "which copy of the snapshot to read (auto: Parquet when present)", choices=("auto", "parquet", "jsonl")
    )
    allow_partial: bool = setting(False, "warn, not fail, on a snapshot whose files differ from its manifest")
    include_xpac: bool = setting(False, "keep XPAC works (is_xpac)")
    allow_empty: bool = setting(False, "write field graphs without nodes instead of failing")
    overwrite: bool = setting(False, OVERWRITE_HELP)

    def validate(self) -> None:
        if len(set(self.fields)) != len(self.fields):
            raise ConfigError(f"--field: {list(self.fields)} names a field twice")
        if self.language and not re.fullmatch(r"[a-z]{2,3}(-[A-Za-z0-9]+)*", self.language):
            raise ConfigError(f"--language: {self.language!r} is not a language code such as 'en'")
        if self.endpoint_url and not re.match(r"https?://", self.endpoint_url):
            raise ConfigError(f"--endpoint-url: {self.endpoint_url!r} must start with http:// or https://")


def check_fields(s: OpenAlexBuildConfig) -> None:
    unknown = [f for f in s.fields if f not in FIELDS]
    if unknown:
        raise ConfigError(f"--field: {unknown} are not OpenAlex field names; valid: {'; '.join(FIELDS)}")
    if len({field_slug(f) for f in s.fields}) != len(s.fields):
        raise ConfigError(f"--field: {list(s.fields)} give the same folder name twice")


KIND = "openalex-graph"


def field_outputs(s: OpenAlexBuildConfig, _inputs: dict) -> dict[str, str]:
    return {f: layout.join(spark_uri(s.output.rstrip("/")), field_slug(f)) for f in s.fields}


def connect_s3(ctx: Context) -> None:
    """s3a settings for an S3 output as boto3 reaches its bucket, before the output is checked."""
    s: OpenAlexBuildConfig = ctx.settings
    output = spark_uri(s.output.rstrip("/"))
    if output.startswith("s3a://"):
        configure_s3a(ctx.spark, output, s.endpoint_url, S3Store(output[6:].split("/", 1)[0], s.endpoint_url))


def build(ctx: Context) -> Result:
    s: OpenAlexBuildConfig = ctx.settings
    spark = ctx.spark
    store, root = open_store(s.input, s.endpoint_url, spark)
    plan = plan_snapshot(root, s.format, s.endpoint_url, s.allow_partial, spark, store=store)
    plan.input = s.input
    if isinstance(store, S3Store):
        configure_s3a(spark, spark_uri(s.input), s.endpoint_url, store)
    arrow_s3 = store.arrow_options() if isinstance(store, S3Store) else None
    with cli.stage("build_openalex", "build_graphs", s.input):
        works, reader = classified_works(spark, plan, list(s.fields), s.include_xpac, arrow_s3)
        result = build_graphs(works, list(s.fields))
    check_graphs(result, s.input, lambda: snapshot_has_topics(spark, plan), s.allow_empty)
    warnings = plan.warnings + check_record_counts(plan, result.per_file, s.allow_partial)
    snapshot = {**plan.to_dict(), "reader": reader}
    for f in snapshot["files"]:
        f["records_read"] = result.per_file.get(f["key"], 0)
    manifests, written = {}, []
    for field, graph in result.graphs.items():
        tables = {layout.NODES_TABLE: (graph.nodes, OPENALEX_NODES), layout.EDGES_TABLE: (graph.edges, EDGES)}
        parquet.write_tables(ctx.stage(field), tables)
        manifests[field] = {
            "kind": KIND,
            "field": field,
            "fields_built_together": list(s.fields),
            "target_language": s.language or None,
            "language_nodes": graph.counts["languages"].get(s.language, 0) if s.language else None,
            "snapshot": snapshot,
            "records": result.accounting(field),
            "counts": graph.counts,
            "problems": result.problems,
            "warnings": warnings,
        }
        written.append(f"{ctx.output(field)} ({graph.counts['nodes']} nodes, {graph.counts['edges']} edges)")
    summary = (
        f"wrote {'; '.join(written)} with nodes, edges, manifest.json; "
        f"records read {result.read} from {len(plan.files)} {plan.format} files, dropped {result.dropped()}"
        + (f"; {len(warnings)} warning{'s' * (len(warnings) > 1)} (see manifest)" if warnings else "")
    )
    return Result(summary, manifests=manifests)


JOB = Job(
    name="build_openalex",
    doc=__doc__,
    settings=OpenAlexBuildConfig,
    body=build,
    inputs=(Input("input", InputKind.SNAPSHOT),),
    outputs=(Output(field_outputs, what="field graph", kind=KIND),),
    tracked=False,
    check=check_fields,
    connect=connect_s3,
)
