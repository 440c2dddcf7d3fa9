"""A real S3 protocol server on 127.0.0.1 for tests: moto's standalone server on a free port.

Clients reach it over HTTP exactly as they reach AWS (boto3 with ``endpoint_url``, Hadoop's s3a
with an endpoint and path-style addressing); nothing in-process is patched.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

# Any credentials do for the local server; set before boto3 or s3a look for them.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "wikigame-test", "AWS_SECRET_ACCESS_KEY": "wikigame-test-secret"}


@dataclass
class S3Server:
    endpoint_url: str
    client: object

    def new_bucket(self, prefix: str = "wikigame") -> str:
        """A fresh bucket (unique, so cached s3a file systems of other tests never apply)."""
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        self.client.create_bucket(Bucket=name)
        return name

    def upload_tree(self, local_dir: str, bucket: str, prefix: str) -> list[str]:
        keys = []
        for dirpath, _, names in os.walk(local_dir):
            for name in sorted(names):
                path = os.path.join(dirpath, name)
                key = f"{prefix.strip('/')}/{os.path.relpath(path, local_dir).replace(os.sep, '/')}"
                self.client.upload_file(path, bucket, key)
                keys.append(key)
        return keys


@contextlib.contextmanager
def s3_server() -> Iterator[S3Server]:
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )
    try:
        yield S3Server(endpoint_url=endpoint, client=client)
    finally:
        server.stop()
