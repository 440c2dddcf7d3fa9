"""Input stores that list and read source files on the driver: a local folder, an S3 bucket through
boto3 (anonymously for the public OpenAlex bucket), any Hadoop URI (:func:`open_store`); and
:func:`configure_s3a`, which gives Spark the S3 settings boto3 used."""

from __future__ import annotations

import logging
import os
import posixpath
from urllib.parse import urlparse

import pyarrow.fs as pafs
from pyspark.sql import SparkSession

from wikigame_spark.storage import Storage, is_local, local_path
from wikigame_spark.storage import StorageError as StorageError
from wikigame_spark.storage import arrow as arrow_path
from wikigame_spark.storage import spark_uri as spark_uri

log = logging.getLogger(__name__)


# --- Stores: listing and small reads on the driver, S3 settings for Spark and pyarrow -------------
# Buckets read anonymously unless another endpoint is given (the public OpenAlex snapshot), and the
# region used when boto3's session names none (the public bucket's).
PUBLIC_BUCKETS = ("openalex",)


DEFAULT_REGION = "us-east-1"


class LocalStore(Storage):
    """A local folder listed before any session (paths are absolute; Spark reads them as ``file:`` URIs)."""

    def __init__(self, root: str):
        super().__init__()
        self.root = os.path.abspath(root)


class S3Store:
    """One bucket through boto3, with :class:`Storage`'s input-store methods (``join``, ``is_file``,
    ``list``, ``size``, ``read``, ``spark_path``) on its keys: anonymous for the public OpenAlex
    bucket, else the usual AWS credential chain (environment, profile, instance role), optionally
    at another endpoint."""

    def __init__(self, bucket: str, endpoint_url: str = "", anonymous: bool | None = None):
        import boto3
        from botocore import UNSIGNED
        from botocore.config import Config

        self.bucket = bucket
        self.endpoint_url = endpoint_url
        self.anonymous = (bucket in PUBLIC_BUCKETS and not endpoint_url) if anonymous is None else anonymous
        config = Config(
            signature_version=UNSIGNED if self.anonymous else None,
            s3={"addressing_style": "path"} if endpoint_url else {},
            retries={"max_attempts": 5, "mode": "standard"},
        )
        self.session = boto3.session.Session()
        region = self.session.region_name or DEFAULT_REGION
        self.client = self.session.client("s3", endpoint_url=endpoint_url or None, region_name=region, config=config)

    def _fail(self, what: str, e: Exception) -> StorageError:
        return StorageError(f"s3://{self.bucket}/{what}: {e}")

    def join(self, base: str, rel: str) -> str:
        return posixpath.normpath(posixpath.join(base, rel)).lstrip("/") if rel else base

    def is_file(self, key: str) -> bool:
        if not key:
            return False
        try:
            self.client.head_object(Bucket=self.bucket, Key=key)
            return True
        except Exception as e:
            if _s3_status(e) in (403, 404):
                return False
            raise self._fail(key, e) from e

    def list(self, prefix: str) -> dict[str, int]:
        base = prefix.rstrip("/") + "/" if prefix else ""
        out = {}
        try:
            for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=base):
                for obj in page.get("Contents", []):
                    if not obj["Key"].endswith("/"):
                        out[obj["Key"][len(base) :]] = obj["Size"]
        except Exception as e:
            raise self._fail(base, e) from e
        return out

    def size(self, key: str) -> int:
        try:
            return self.client.head_object(Bucket=self.bucket, Key=key)["ContentLength"]
        except Exception as e:
            raise self._fail(key, e) from e

    def read(self, key: str) -> bytes:
        try:
            return self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except Exception as e:
            raise self._fail(key, e) from e

    def spark_path(self, key: str) -> str:
        return f"s3a://{self.bucket}/{key}"

    def arrow_options(self) -> dict:
        """The same bucket, endpoint and credentials for pyarrow's ``S3FileSystem`` (the Python
        workers' reads); without static credentials pyarrow's own chain finds them."""
        options: dict = {"region": self.client.meta.region_name or DEFAULT_REGION}
        if self.endpoint_url:
            endpoint = urlparse(self.endpoint_url)
            options.update(endpoint_override=endpoint.netloc + endpoint.path.rstrip("/"), scheme=endpoint.scheme)
        if self.anonymous:
            options["anonymous"] = True
        creds = self.credentials()
        for name in ("access.key", "secret.key", "session.token"):
            if name in creds:
                options[name.replace(".", "_")] = creds[name]
        return options

    def credentials(self) -> dict[str, str]:
        """Static credentials boto3 resolved (environment, profile files) for s3a to use too;
        empty when anonymous or when they refresh themselves (instance roles), which s3a's own
        provider chain finds the same way."""
        if self.anonymous:
            return {}
        from botocore.credentials import RefreshableCredentials

        creds = self.session.get_credentials()
        if creds is None or isinstance(creds, RefreshableCredentials):
            return {}
        frozen = creds.get_frozen_credentials()
        out = {"access.key": frozen.access_key, "secret.key": frozen.secret_key}
        if frozen.token:
            out["session.token"] = frozen.token
        return out


def _s3_status(e: Exception) -> int | None:
    response = getattr(e, "response", None) or {}
    return response.get("ResponseMetadata", {}).get("HTTPStatusCode")


class HadoopStore(Storage):
    """Any other Hadoop URI (``hdfs://``, ``dbfs:/``, ``abfss://`` …), listed through the session's
    Hadoop file system."""


def open_store(uri: str, endpoint_url: str = "", spark: SparkSession | None = None):
    """``(store, root)`` for an input URI: s3:// and s3a:// through boto3, plain paths locally."""
    parsed = urlparse(uri)
    if parsed.scheme in ("s3", "s3a"):
        if not parsed.netloc:
            raise StorageError(f"input {uri!r}: no bucket name")
        return S3Store(parsed.netloc, endpoint_url), parsed.path.strip("/")
    if is_local(uri):
        store = LocalStore(local_path(uri))
        return store, store.root
    if spark is None:
        raise StorageError(f"input {uri!r}: a {parsed.scheme}:// input needs a Spark session to list it")
    return HadoopStore(spark), uri.rstrip("/")


def configure_s3a(spark: SparkSession, uri: str, endpoint_url: str = "", store: S3Store | None = None) -> None:
    """Per-bucket s3a settings matching how boto3 reached the bucket; settings the user already
    gave (``spark.hadoop.fs.s3a.bucket.<b>.…``) win."""
    parsed = urlparse(uri)
    if parsed.scheme not in ("s3", "s3a"):
        return
    bucket = parsed.netloc
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    prefix = f"fs.s3a.bucket.{bucket}."
    settings: dict[str, str] = {}
    anonymous = store.anonymous if store is not None else (bucket in PUBLIC_BUCKETS and not endpoint_url)
    if anonymous:
        settings["aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"
        settings["endpoint.region"] = DEFAULT_REGION
    if endpoint_url:
        settings["endpoint"] = endpoint_url
        settings["path.style.access"] = "true"
        settings["connection.ssl.enabled"] = str(endpoint_url.startswith("https://")).lower()
        settings.setdefault("endpoint.region", (store.client.meta.region_name if store else None) or DEFAULT_REGION)
    creds = store.credentials() if store is not None else {}
    if creds:
        settings.update(creds)
        if "session.token" in creds:
            settings["aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
        else:
            settings["aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
    for key, value in settings.items():
        if conf.get(prefix + key) is None:
            conf.set(prefix + key, value)


def open_input_file(path: str, s3: dict | None = None):
    """A pyarrow input file for a ``file://`` or ``s3a://`` URI, the latter through pyarrow's S3
    file system with ``s3`` (:meth:`S3Store.arrow_options`: the settings boto3 used)."""
    fs, p = arrow_path(path, s3 or {})
    return p if isinstance(fs, pafs.LocalFileSystem) else fs.open_input_file(p)
