"""AWS for the tests: moto in server mode (a real EC2 API emulator) on a free loopback port, and two small HTTP
servers for what moto cannot do (tests/loopback.py runs them).

- ``MotoServer``: ``python -m moto.server`` as a subprocess; reached through ``endpoint_url``; ``reset()`` empties
  it between tests; ``enforce_iam()`` turns on moto's IAM policy evaluation (real AccessDenied / AuthFailure).
- ``PagingProxy``: moto answers DescribeVolumes in one page whatever MaxResults says (moto 5.2: no pagination for
  this call). The proxy forwards every request to moto unchanged and cuts moto's DescribeVolumes answer into
  pages the way EC2 documents it (MaxResults from 5, an opaque NextToken), so the package's paginator is run
  against moto's own volumes. It records each DescribeVolumes request it saw.
- ``Ec2ErrorServer``: answers every request with one EC2 XML error (UnauthorizedOperation is EC2's own
  code for a denied action; moto's IAM evaluation answers AccessDenied instead).

Test setup writes to moto (creates volumes, instances, IAM users) through boto3 with fixed fake credentials
passed explicitly; the package under test only ever reads.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Optional

from loopback import LoopbackFake, Reply, Request, free_port

FAKE_KEY_ID = "testing"
FAKE_SECRET = "testing-secret-not-real"


def aws_test_env(tmp: Path, **extra: str) -> dict[str, str]:
    """Environment for a process that must see only the fake credentials: no ~/.aws, no instance metadata."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    env.update(HOME=str(tmp), AWS_CONFIG_FILE=str(tmp / "no-aws-config"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp / "no-aws-credentials"), AWS_EC2_METADATA_DISABLED="true")
    env.update(extra)
    return env


def use_fake_credentials(monkeypatch: Any, tmp: Path) -> None:
    """This process's boto3 chain finds only the fake keys (a pytest monkeypatch sets and restores the env)."""
    for name in [key for key in os.environ if key.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name, value in aws_test_env(tmp, AWS_ACCESS_KEY_ID=FAKE_KEY_ID, AWS_SECRET_ACCESS_KEY=FAKE_SECRET).items():
        if name.startswith("AWS_") or name == "HOME":
            monkeypatch.setenv(name, value)


class MotoServer:
    def __init__(self, log: Path) -> None:
        self.log = log
        self.port = 0
        self.process: Optional[subprocess.Popen] = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> MotoServer:
        for _ in range(3):  # another process may take the free port between our probe and moto's bind
            self.port = free_port()
            with open(self.log, "ab") as log:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                    stdout=log, stderr=subprocess.STDOUT, env=aws_test_env(self.log.parent), start_new_session=True)
            deadline = time.monotonic() + timeout
            while self.process.poll() is None and time.monotonic() < deadline:
                try:
                    urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=2).read()
                    return self
                except (urllib.error.URLError, OSError):
                    time.sleep(0.2)
            self.stop()
        raise RuntimeError(f"moto server did not start; see {self.log}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def _post(self, path: str, body: bytes = b"") -> None:
        # Not form-encoded: moto reads reset-auth's count from the raw body, which Flask empties for forms.
        request = urllib.request.Request(self.endpoint + path, data=body, method="POST",
                                         headers={"Content-Type": "text/plain"})
        urllib.request.urlopen(request, timeout=10).read()

    def reset(self) -> None:
        self._post("/moto-api/reset")

    def enforce_iam(self) -> None:
        """From the next request on, moto checks signatures against its IAM users and evaluates their policies."""
        self._post("/moto-api/reset-auth", b"0")

    def relax_iam(self) -> None:
        self._post("/moto-api/reset-auth", b"inf")

    def client(self, service: str, region: str = "us-east-1", key_id: str = FAKE_KEY_ID,
               secret: str = FAKE_SECRET) -> Any:
        import boto3
        return boto3.session.Session(aws_access_key_id=key_id, aws_secret_access_key=secret,
                                     region_name=region).client(service, endpoint_url=self.endpoint)


def create_volume(ec2: Any, zone: str, size: int = 10, volume_type: str = "gp3",
                  tags: Optional[dict[str, str]] = None) -> str:
    spec: dict[str, Any] = {"AvailabilityZone": zone, "Size": size, "VolumeType": volume_type}
    if volume_type in ("io1", "io2"):
        spec["Iops"] = 3000  # EC2 requires it for provisioned-IOPS types
    if tags:
        spec["TagSpecifications"] = [{"ResourceType": "volume",
                                      "Tags": [{"Key": key, "Value": value} for key, value in tags.items()]}]
    return ec2.create_volume(**spec)["VolumeId"]


def csi_tags(pv_name: str, namespace: str, claim: str, cluster_id: Optional[str] = None) -> dict[str, str]:
    """The tags the EBS CSI driver writes (pkg/driver/controller.go; created-for with --extra-create-metadata)."""
    tags = {"CSIVolumeName": pv_name, "ebs.csi.aws.com/cluster": "true",
            "kubernetes.io/created-for/pvc/namespace": namespace, "kubernetes.io/created-for/pvc/name": claim,
            "kubernetes.io/created-for/pv/name": pv_name}
    if cluster_id:
        tags.update({f"kubernetes.io/cluster/{cluster_id}": "owned", "KubernetesCluster": cluster_id,
                     "ebs.csi.aws.com/cluster-name": cluster_id, "Name": f"{cluster_id}-dynamic-{pv_name}"})
    return tags


def _ec2_error(code: str, message: str, status: int) -> tuple[int, bytes]:
    body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error></Errors>"
            "<RequestID>7f4a1c2e-0b5d-4e8f-9a6c-3d2b1e0f9a8b</RequestID></Response>")
    return status, body.encode()


class PagingProxy(LoopbackFake):
    """EC2's DescribeVolumes pagination in front of moto, which ignores MaxResults."""

    def __init__(self, moto: MotoServer, snapshot_page: Optional[int] = None,
                 fail_after: Optional[int] = None, volume_page: Optional[int] = None) -> None:
        self.moto = moto
        # With volume_page set, DescribeVolumes answers are cut into pages of that many whatever MaxResults says
        # (EC2 may return fewer than asked): a client that sends the default 500 still reads several pages.
        self.volume_page = volume_page
        # With fail_after set, DescribeVolumes pages after that many are refused (EC2's UnauthorizedOperation): a
        # listing that fails part-way.
        self.fail_after = fail_after
        self.describe_requests: list[dict[str, str]] = []
        # DescribeSnapshots by id: EC2 may answer in pages (a NextToken) even when no MaxResults was sent; with
        # snapshot_page set, moto's answer is cut into pages of that many, to prove the reader follows them.
        self.snapshot_page = snapshot_page
        self.snapshot_requests: list[dict[str, str]] = []

    def serve(self, request: Request) -> Reply:
        form = dict(urllib.parse.parse_qsl(request.body.decode()))
        forwarded = urllib.request.Request(self.moto.endpoint + request.target, data=request.body, method="POST",
                                           headers={k: v for k, v in request.headers.items() if k != "host"})
        try:
            with urllib.request.urlopen(forwarded, timeout=30) as answer:
                status, payload = answer.status, answer.read()
        except urllib.error.HTTPError as error:
            status, payload = error.code, error.read()
        if form.get("Action") == "DescribeVolumes" and status == 200:
            self.describe_requests.append(form)
            status, payload = self._page({**form, "MaxResults": str(self.volume_page)} if self.volume_page
                                         else form, payload)
            if self.fail_after is not None and len(self.describe_requests) > self.fail_after:
                status, payload = _ec2_error("UnauthorizedOperation",
                                             "You are not authorized to perform this operation.", 403)
        if form.get("Action") == "DescribeSnapshots" and status == 200 and self.snapshot_page:
            self.snapshot_requests.append(form)
            status, payload = self._page({**form, "MaxResults": str(self.snapshot_page)}, payload, "snapshotSet",
                                         minimum=1)
        return Reply(status, payload, "text/xml")

    @staticmethod
    def _page(form: dict[str, str], payload: bytes, items_set: str = "volumeSet",
              minimum: int = 5) -> tuple[int, bytes]:
        if "MaxResults" not in form:
            return 200, payload
        limit = int(form["MaxResults"])
        if limit < minimum or limit > 1000:
            return _ec2_error("InvalidParameterValue", f"Value ( {limit} ) for parameter maxResults is invalid. "
                              "Expecting a value between 5 and 1000.", 400)
        start = int(base64.urlsafe_b64decode(form["NextToken"]).decode()) if form.get("NextToken") else 0
        root = ET.fromstring(payload)
        namespace = root.tag[:root.tag.index("}") + 1] if root.tag.startswith("{") else ""
        ET.register_namespace("", namespace.strip("{}"))
        volume_set = root.find(f"{namespace}{items_set}")
        assert volume_set is not None, payload[:500]
        items = list(volume_set)
        for item in items:
            volume_set.remove(item)
        volume_set.extend(items[start:start + limit])
        if start + limit < len(items):
            token = ET.SubElement(root, f"{namespace}nextToken")
            token.text = base64.urlsafe_b64encode(str(start + limit).encode()).decode()
        return 200, ET.tostring(root, xml_declaration=True, encoding="UTF-8")


class Ec2ErrorServer(LoopbackFake):
    """Every request gets one EC2 error (status, XML body as EC2 sends it), or the body given."""

    def __init__(self, code: str, message: str, status: int = 403, body: Optional[bytes] = None) -> None:
        # body: answer that instead, as a proxy in the way would (an HTML page, not EC2's XML)
        self.answer = (status, body) if body is not None else _ec2_error(code, message, status)
        self.requests = 0

    def serve(self, request: Request) -> Reply:
        self.requests += 1
        return Reply(*self.answer, "text/xml;charset=UTF-8")
