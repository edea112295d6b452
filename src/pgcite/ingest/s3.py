"""Objects under an s3:// prefix as a source: listed, then downloaded one at a time with bounded
reads; boto3 is imported only when one is opened, and its failures become one-line SourceErrors."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pgcite.errors import SourceError
from pgcite.ingest.sources import Document, Reader, Skipped, Unchanged, one_line, split_path, to_record, too_big

__all__ = ["S3Source"]


def _parse_s3(location: str) -> tuple[str, str]:
    rest = location[len("s3://") :]
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise SourceError(one_line(f"no bucket in {location}: write it as s3://bucket or s3://bucket/prefix"))
    prefix = prefix.strip("/")
    # A prefix is a folder: "docs" must not also pick up "docs-old/...".
    return bucket, f"{prefix}/" if prefix else ""


class S3Source(Reader):
    """Objects under s3://bucket/prefix, listed then downloaded one at a time."""

    def __init__(self, location: str, *, endpoint_url: str | None = None, **options: Any) -> None:
        super().__init__(location, **options)
        self.bucket, self.prefix = _parse_s3(location)
        self._client = self._make_client(endpoint_url)

    def _make_client(self, endpoint_url: str | None) -> Any:
        import boto3  # imported here: folder and zip users should not pay for it
        from botocore.config import Config

        # Short timeouts and few retries: an unreachable endpoint fails in seconds.
        config = Config(
            connect_timeout=5,
            read_timeout=30,
            retries={"max_attempts": 2, "mode": "standard"},
        )
        try:
            # endpoint_url=None lets boto3 read AWS_ENDPOINT_URL(_S3) and the rest itself.
            return boto3.session.Session().client("s3", endpoint_url=endpoint_url, config=config)
        except Exception as err:  # noqa: BLE001 - botocore raises many types for a bad configuration
            raise SourceError(
                one_line(
                    f"cannot set up S3 access for {self.location} ({err}): "
                    "check AWS_ENDPOINT_URL, AWS_DEFAULT_REGION and AWS_PROFILE"
                )
            ) from None

    @property
    def endpoint(self) -> str:
        return str(self._client.meta.endpoint_url)

    def _source_error(self, err: Exception) -> SourceError:
        """Translate a boto3 failure into one line that says what to do."""
        from botocore.exceptions import (
            ClientError,
            ConnectionClosedError,
            ConnectTimeoutError,
            EndpointConnectionError,
            NoCredentialsError,
            ReadTimeoutError,
        )

        where = f"s3://{self.bucket}/{self.prefix}"
        if isinstance(err, NoCredentialsError):
            msg = (
                f"no AWS credentials found for {where}: "
                "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)"
            )
        elif isinstance(err, (EndpointConnectionError, ConnectTimeoutError, ConnectionClosedError, ReadTimeoutError)):
            msg = f"cannot reach the S3 endpoint {self.endpoint}: check AWS_ENDPOINT_URL and your network"
        elif isinstance(err, ClientError):
            code = str(err.response.get("Error", {}).get("Code", ""))
            status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code == "NoSuchBucket" or (status == 404 and code in ("404", "NotFound")):
                msg = (
                    f"S3 bucket {self.bucket!r} does not exist at {self.endpoint}: "
                    f"check the bucket name in {self.location}"
                )
            elif code in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "403") or status == 403:
                msg = (
                    f"access denied to {where} ({code}): check the credentials and that "
                    "they may list and read this bucket"
                )
            else:
                text = err.response.get("Error", {}).get("Message", "") or str(err)
                msg = f"S3 error on {where} ({code}: {text}): check the location and credentials"
        else:
            msg = f"S3 error on {where} ({err}): check the location, endpoint and credentials"
        return SourceError(one_line(msg))

    def _list(self) -> list[tuple[str, str, int, str]]:
        """(relative path, key, size, stamp) of the wanted objects, sorted by path."""
        from botocore.exceptions import BotoCoreError, ClientError

        found: dict[str, tuple[str, str, int, str]] = {}
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.prefix)
            for page in pages:
                for obj in page.get("Contents", []):
                    key = str(obj["Key"])
                    if key.endswith("/"):  # "folder" placeholder objects
                        continue
                    rel = "/".join(split_path(key[len(self.prefix) :]))
                    if not rel or not self._wanted(rel):
                        continue
                    size = int(obj.get("Size", 0))
                    found[rel] = (rel, key, size, f"{size}:{obj.get('ETag', '')}")
        except (BotoCoreError, ClientError) as err:
            raise self._source_error(err) from None
        return [found[p] for p in sorted(found)]

    def _get(self, rel: str, key: str, stamp: str) -> Document | Skipped:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            body = self._client.get_object(Bucket=self.bucket, Key=key)["Body"]
            try:
                raw = body.read(self.limits.max_file_bytes + 1)  # bounded download
            finally:
                body.close()
        except ClientError as err:
            # One object gone or forbidden: skip it, keep the rest of the scan.
            code = err.response.get("Error", {}).get("Code", "")
            reason = f"cannot download it from S3 ({code}): check that it exists and is readable"
            return Skipped(rel, one_line(reason))
        except BotoCoreError as err:
            raise self._source_error(err) from None
        return to_record(rel, raw, self.limits, stamp)

    def exists(self, path: str) -> bool:
        from botocore.exceptions import BotoCoreError, ClientError

        key = self.prefix + "/".join(split_path(path))
        try:
            for prefix in (key, key + "/"):  # the file itself, or a folder of that name
                found = self._client.list_objects_v2(Bucket=self.bucket, Prefix=prefix, MaxKeys=1)
                if any(o["Key"] == key or o["Key"].startswith(key + "/") for o in found.get("Contents", [])):
                    return True
        except (BotoCoreError, ClientError) as err:
            raise self._source_error(err) from None
        return False

    def read(self, path: str) -> bytes:
        from botocore.exceptions import BotoCoreError, ClientError

        key = self.prefix + self._member(path)
        try:
            body = self._client.get_object(Bucket=self.bucket, Key=key)["Body"]
            try:
                return self._bounded(path, body.read(self.limits.max_file_bytes + 1))
            finally:
                body.close()
        except ClientError:
            raise FileNotFoundError(f"{path} not found in {self.location}") from None
        except BotoCoreError as err:
            raise OSError(str(self._source_error(err))) from None

    def scan(self, known: Mapping[str, str] = {}) -> Iterator[Document | Skipped | Unchanged]:
        self.others = 0
        for rel, key, size, stamp in self._list():  # listing errors surface before any record
            if known.get(rel) == stamp:
                yield Unchanged(rel)
            elif size > self.limits.max_file_bytes:  # before downloading
                yield Skipped(rel, too_big(size, self.limits))
            else:
                yield self._get(rel, key, stamp)
