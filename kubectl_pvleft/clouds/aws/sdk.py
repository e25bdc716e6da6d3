"""boto3, the way every EBS call here uses it: each call bounded by the run's time, the errors a failed call raises,
and what its clients answer, typed. Imported only when a census, a snapshot look-up or a price list is asked for
(boto3 is an extra, and imported inside the functions here).

boto3 ships no types: its clients are made at run time from each service's model, and answer with plain dicts in
that model's shapes (a member the answer leaves out is absent). The fields read here are declared once below, as
TypedDicts, and the clients as Protocols of the calls made: mypy checks every read against them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol, TypedDict, TypeVar, overload

if TYPE_CHECKING:  # botocore's own class (untyped: mypy reads it as Any), named for the reader
    from botocore.config import Config


def bounded_config(timeout: float) -> Config:
    """botocore's Config for calls that must end within ``timeout`` seconds: no single call may outlast the run
    (connect within 10 s, read within 60 s, at most), three attempts in botocore's standard retry mode."""
    import botocore.config

    return botocore.config.Config(user_agent_extra="kubectl-pvleft", connect_timeout=min(10.0, timeout),
                                  read_timeout=min(60.0, timeout), retries={"mode": "standard", "max_attempts": 3})


def sdk_failures() -> tuple[type[Exception], ...]:
    """What boto3 raises for a failed call: its own errors, a reply that is not the service's XML (an HTML page
    from a proxy), and OSError from reading a credential file (IRSA's token), which it passes through."""
    import botocore.exceptions
    import botocore.parsers

    return (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError,
            botocore.parsers.ResponseParserError, OSError)


# -- what EC2 and the Price List answer (botocore's parsed shapes; only the members read here) ----------------

class Tag(TypedDict, total=False):
    Key: str
    Value: str


class VolumeAttachment(TypedDict, total=False):
    InstanceId: str
    AssociatedResource: str
    DeleteOnTermination: bool


class VolumeId(TypedDict):
    VolumeId: str


class Volume(VolumeId, total=False):
    """EC2's ``Volume`` (DescribeVolumes)."""

    Tags: list[Tag]
    Attachments: list[VolumeAttachment]
    CreateTime: datetime
    AvailabilityZone: str
    Size: int  # GiB
    VolumeType: str
    State: str
    Iops: int
    Throughput: int  # MiB/s


class SnapshotId(TypedDict):
    SnapshotId: str


class Snapshot(SnapshotId, total=False):
    """EC2's ``Snapshot`` (DescribeSnapshots)."""

    StorageTier: str
    FullSnapshotSizeInBytes: int
    VolumeSize: int  # GiB
    Tags: list[Tag]
    StartTime: datetime
    State: str
    VolumeId: str


class ResponseMetadata(TypedDict, total=False):
    RequestId: str


class VolumesPage(TypedDict, total=False):
    Volumes: list[Volume]
    ResponseMetadata: ResponseMetadata


class SnapshotsPage(TypedDict, total=False):
    Snapshots: list[Snapshot]


class ProductsPage(TypedDict, total=False):
    PriceList: list[str]  # each product a JSON document of its own (``prices`` reads it as untyped JSON)


class ErrorDetails(TypedDict, total=False):
    Code: str
    Message: str


class ErrorResponse(TypedDict, total=False):
    Error: ErrorDetails


class ServiceError(Protocol):
    """botocore's ``ClientError``: the service answered with an error."""

    @property
    def response(self) -> ErrorResponse: ...

    @property
    def operation_name(self) -> str: ...


# -- the clients, as the calls here use them ------------------------------------------------------------------

Page = TypeVar("Page", covariant=True)


class Paginator(Protocol[Page]):
    def paginate(self, **parameters: object) -> Iterable[Page]: ...


class Shape(Protocol):
    @property
    def members(self) -> Mapping[str, object]: ...


class OperationModel(Protocol):
    @property
    def input_shape(self) -> Shape: ...


class ServiceModel(Protocol):
    def operation_model(self, name: str) -> OperationModel: ...


class ClientMeta(Protocol):
    @property
    def service_model(self) -> ServiceModel: ...


class Ec2Client(Protocol):
    """An EC2 client (``session.client("ec2")``): the read-only calls the census and the snapshots make."""

    @property
    def meta(self) -> ClientMeta: ...

    @overload
    def get_paginator(self, operation: Literal["describe_volumes"]) -> Paginator[VolumesPage]: ...

    @overload
    def get_paginator(self, operation: Literal["describe_snapshots"]) -> Paginator[SnapshotsPage]: ...

    def describe_volumes(self, *, VolumeIds: list[str]) -> VolumesPage: ...


class PricingClient(Protocol):
    """A Price List Query API client (``session.client("pricing")``)."""

    def get_paginator(self, operation: Literal["get_products"]) -> Paginator[ProductsPage]: ...
