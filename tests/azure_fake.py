"""A local Azure Resource Manager for the disk and snapshot censuses, with the token endpoint it trusts, over HTTPS on
127.0.0.1.

It answers ``Disks_List``, ``Disks_ListByResourceGroup``, ``Snapshots_List``, ``Snapshots_ListByResourceGroup`` and
``Snapshots_Get`` (ARM's ``ResourceNotFound`` for a snapshot it does not hold) with ARM's shapes (resource IDs with
the resource group upper-cased, as ARM writes AKS's node resource groups; seven-digit fractional seconds; pages of at
most ``page_size`` resources chained by an absolute ``nextLink`` carrying ``$skiptoken``), ARM's error bodies for an
unknown subscription or resource group, a 403 (AuthorizationFailed), a 401 without a valid token, and a 429 with
Retry-After. Every request is matched to the Disks or Snapshots operation azure-mgmt-compute's generated code builds
for it (tests/azure_models.py: path, query parameters, api-version) and every body sent is checked against the
generated models the SDK reads it as; a mismatch is recorded in ``drift`` and answered with a 500, so a fake that
drifts from the published API fails the test.

The SDK reaches it only through documented settings: ``AZURE_AUTHORITY_HOST`` and the ``AZURE_CLIENT_ID`` /
``AZURE_TENANT_ID`` / ``AZURE_CLIENT_SECRET`` of EnvironmentCredential for the token (OpenID discovery, then the
client-credentials grant), ComputeManagementClient's ``base_url`` and ``credential_scopes`` for ARM (the CLI sets
them from PVLEFT_ARM_ENDPOINT), and ``REQUESTS_CA_BUNDLE`` to trust the test certificate.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Optional
from urllib.parse import parse_qsl, quote

import azure_models
import tls_material
from loopback import LoopbackFake, Reply, Request, json_reply

TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
CLIENT_ID = "5e5f0a8c-1c3d-4b7a-9f21-6c0d4e8b2a17"
CLIENT_SECRET = "test-client-secret-not-real"


def disk_id(subscription: str, group: str, name: str) -> str:
    return f"/subscriptions/{subscription}/resourceGroups/{group}/providers/Microsoft.Compute/disks/{name}"


def csi_tags(pv: str, namespace: str, claim: str, cluster: Optional[str] = None) -> dict[str, str]:
    """The tags the Azure Disk CSI driver writes (and a cluster-name tag, as a StorageClass's `tags` may add)."""
    tags = {"kubernetes.io-created-for-pv-name": pv, "kubernetes.io-created-for-pvc-name": claim,
            "kubernetes.io-created-for-pvc-namespace": namespace, "k8s-azure-created-by": "kubernetes-azure-dd"}
    if cluster:
        tags["k8s-azure-cluster-name"] = cluster
    return tags


def azure_disk(subscription: str, group: str, name: str, *, size_gb: int = 20, sku: str = "Premium_LRS",
               location: str = "eastus", zone: Optional[str] = "1", managed_by: Optional[str] = None,
               state: Optional[str] = None, tags: Optional[dict[str, str]] = None,
               created: str = "2026-03-03T17:12:33.4215632+00:00", os_disk: bool = False,
               ownership_updated: Optional[str] = None) -> dict[str, Any]:
    """A Disk resource as ARM returns it: the resource group in the ID upper-cased, as ARM writes MC_ groups;
    ``ownership_updated``: its LastOwnershipUpdateTime (when a VM last took or let go of it)."""
    properties: dict[str, Any] = {
        "creationData": {"createOption": "FromImage" if os_disk else "Empty"},
        "diskSizeGB": size_gb, "diskSizeBytes": size_gb << 30, "uniqueId": secrets.token_hex(16),
        "provisioningState": "Succeeded", "diskIOPSReadWrite": 120, "diskMBpsReadWrite": 25,
        "encryption": {"type": "EncryptionAtRestWithPlatformKey"}, "networkAccessPolicy": "AllowAll",
        "timeCreated": created, "diskState": state or ("Attached" if managed_by else "Unattached"),
    }
    if os_disk:
        properties.update(osType="Linux", hyperVGeneration="V2")
    if ownership_updated is not None:
        properties["LastOwnershipUpdateTime"] = ownership_updated
    disk: dict[str, Any] = {
        "id": disk_id(subscription, group.upper(), name), "name": name, "type": "Microsoft.Compute/disks",
        "location": location, "sku": {"name": sku, "tier": "Premium" if sku.startswith("Premium") else "Standard"},
        "properties": properties,
    }
    if zone:
        disk["zones"] = [zone]
    if tags:
        disk["tags"] = dict(tags)
    if managed_by:
        disk["managedBy"] = (f"/subscriptions/{subscription}/resourceGroups/{group.upper()}/providers/"
                             f"Microsoft.Compute/virtualMachines/{managed_by}")
    return disk


def snapshot_id(subscription: str, group: str, name: str) -> str:
    return f"/subscriptions/{subscription}/resourceGroups/{group}/providers/Microsoft.Compute/snapshots/{name}"


def csi_snapshot_tags(source_disk: str, snapshot: Optional[str] = None, namespace: Optional[str] = None,
                      cluster: Optional[str] = None) -> dict[str, str]:
    """The tags the Azure Disk CSI driver writes on a snapshot (azuredisk-csi-driver pkg/azuredisk/controllerserver.go
    CreateSnapshot): k8s-azure-created-by and source_volume_id, the VolumeSnapshot's name and namespace with
    --extra-create-metadata; a cluster-name tag, as a VolumeSnapshotClass's `tags` parameter may add."""
    tags = {"k8s-azure-created-by": "kubernetes-azure-dd", "source_volume_id": source_disk}
    if snapshot:
        tags["kubernetes.io-created-for-snapshot-name"] = snapshot
    if namespace:
        tags["kubernetes.io-created-for-snapshot-namespace"] = namespace
    if cluster:
        tags["k8s-azure-cluster-name"] = cluster
    return tags


def azure_snapshot(subscription: str, group: str, name: str, *, source_disk: Optional[str] = None,
                   size_gb: int = 20, incremental: bool = True, sku: str = "Standard_LRS", location: str = "eastus",
                   tags: Optional[dict[str, str]] = None,
                   created: str = "2026-03-04T08:01:02.1234567+00:00") -> dict[str, Any]:
    """A Snapshot resource as ARM returns it (the resource group in the ID upper-cased, as for disks): a ``Copy`` of
    ``source_disk`` (an ARM disk ID)."""
    creation: dict[str, Any] = {"createOption": "Copy"}
    if source_disk:
        creation.update(sourceResourceId=source_disk, sourceUniqueId=secrets.token_hex(16))
    snapshot: dict[str, Any] = {
        "id": snapshot_id(subscription, group.upper(), name), "name": name, "type": "Microsoft.Compute/snapshots",
        "location": location, "sku": {"name": sku, "tier": "Standard"},
        "properties": {
            "creationData": creation, "diskSizeGB": size_gb, "diskSizeBytes": size_gb << 30,
            "uniqueId": secrets.token_hex(16), "provisioningState": "Succeeded", "timeCreated": created,
            "incremental": incremental, "diskState": "Unattached", "networkAccessPolicy": "AllowAll",
            "encryption": {"type": "EncryptionAtRestWithPlatformKey"},
        },
    }
    if incremental:
        snapshot["properties"]["incrementalSnapshotFamilyId"] = secrets.token_hex(16)
    if tags:
        snapshot["tags"] = dict(tags)
    return snapshot


def _error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


class FakeArm(LoopbackFake):
    """Subscriptions, their resource groups and disks; start() serves them and the token endpoint over HTTPS."""

    tls = http11 = True

    def __init__(self, page_size: int = 2) -> None:
        self.page_size = page_size
        self.groups: dict[str, set[str]] = {}  # subscription -> resource groups (lower case: ARM's are)
        self.disks: dict[str, list[dict[str, Any]]] = {}
        self.snapshots: dict[str, list[dict[str, Any]]] = {}
        self.forbidden: set[tuple[str, str]] = set()  # (subscription, group lower): AuthorizationFailed
        self.throttle: dict[str, int] = {}  # path -> how many 429s to send first
        self.retry_after = "1"
        self.requests: list[tuple[str, str, dict[str, str]]] = []  # ARM: (method, path, query)
        self.token_requests: list[dict[str, str]] = []
        self.drift: list[str] = []
        self.tokens: set[str] = set()

    def add_group(self, subscription: str, group: str) -> None:
        self.groups.setdefault(subscription, set()).add(group.lower())
        self.disks.setdefault(subscription, [])

    def add_disk(self, disk: dict[str, Any]) -> dict[str, Any]:
        subscription, group = disk["id"].split("/")[2], disk["id"].split("/")[4]
        self.add_group(subscription, group)
        self.disks[subscription].append(disk)
        return disk

    def add_snapshot(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        subscription, group = snapshot["id"].split("/")[2], snapshot["id"].split("/")[4]
        self.add_group(subscription, group)
        self.snapshots.setdefault(subscription, []).append(snapshot)
        return snapshot

    # -- serving -----------------------------------------------------------------------------------------

    def ca_file(self, folder: Path) -> str:
        path = folder / "arm-ca.pem"
        path.write_bytes(base64.b64decode(tls_material.ca_data()))
        return str(path)

    def env(self, folder: Path) -> dict[str, str]:
        """What a user would set: EnvironmentCredential's variables, the authority, the ARM endpoint, the CA."""
        return {"AZURE_CLIENT_ID": CLIENT_ID, "AZURE_TENANT_ID": TENANT, "AZURE_CLIENT_SECRET": CLIENT_SECRET,
                "AZURE_AUTHORITY_HOST": self.endpoint, "PVLEFT_ARM_ENDPOINT": self.endpoint,
                "REQUESTS_CA_BUNDLE": self.ca_file(folder)}

    def serve(self, request: Request) -> Reply:
        if request.method == "GET" and request.path.endswith("/.well-known/openid-configuration"):
            return self._reply(200, self.openid_configuration(request.path))
        if request.method == "GET":
            self.requests.append(("GET", request.path, request.query))
            return self._reply(*self.answer(request.path, request.query, request.headers.get("authorization", "")))
        if request.method == "POST" and request.path == f"/{TENANT}/oauth2/v2.0/token":
            return self._reply(*self.token(dict(parse_qsl(request.body.decode()))))
        self.requests.append((request.method, request.path, {}))  # the census is read-only: any other verb is a bug
        return self._reply(405, _error("MethodNotAllowed", "read-only test server"))

    @staticmethod
    def _reply(status: int, body: Any, headers: Optional[dict[str, str]] = None) -> Reply:
        return json_reply(status, body, "application/json; charset=utf-8", **{"x-ms-request-id": secrets.token_hex(8)},
                          **(headers or {}))

    # -- the token endpoint ------------------------------------------------------------------------------

    def openid_configuration(self, path: str) -> dict[str, Any]:
        tenant = path.strip("/").split("/")[0]
        base = f"{self.endpoint}/{tenant}"
        return {"token_endpoint": f"{base}/oauth2/v2.0/token",
                "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
                "issuer": f"{base}/v2.0", "token_endpoint_auth_methods_supported": ["client_secret_post"]}

    def token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """The client-credentials grant: this client, this secret, a token for this Resource Manager only."""
        self.token_requests.append({k: v for k, v in form.items() if k != "client_secret"})
        if form.get("grant_type") != "client_credentials" or form.get("client_id") != CLIENT_ID:
            return 400, {"error": "unauthorized_client", "error_description": "AADSTS700016: unknown client"}
        if form.get("client_secret") != CLIENT_SECRET:
            return 401, {"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret"}
        if form.get("scope") != f"{self.endpoint}/.default":
            return 400, {"error": "invalid_scope", "error_description": f"AADSTS70011: scope {form.get('scope')}"}
        token = "eyJ0eXAiOiJKV1QifQ." + secrets.token_urlsafe(24) + ".sig"
        self.tokens.add(token)
        return 200, {"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": token}

    # -- Resource Manager --------------------------------------------------------------------------------

    def answer(self, path: str, query: dict[str, str], authorization: str) -> tuple[int, Any, dict[str, str]]:
        try:
            operation, params = azure_models.route("GET", path)
            azure_models.check_request(operation, query)
        except azure_models.Drift as exc:
            self.drift.append(str(exc))
            return 500, _error("InternalServerError", f"drift: {exc}"), {}
        status, body, headers = self._answer(path, params, query, authorization, operation.name)
        try:
            azure_models.check_response(operation, status, body)
        except azure_models.Drift as exc:
            self.drift.append(str(exc))
            return 500, _error("InternalServerError", f"drift: {exc}"), {}
        return status, body, headers

    def _answer(self, path: str, params: dict[str, str], query: dict[str, str], authorization: str,
                operation: str) -> tuple[int, Any, dict[str, str]]:
        if not authorization.startswith("Bearer ") or authorization[len("Bearer "):] not in self.tokens:
            return 401, _error("InvalidAuthenticationToken", "The access token is invalid."), {}
        if self.throttle.get(path):
            self.throttle[path] -= 1
            return 429, _error("TooManyRequests", "The request is being throttled."), {"Retry-After": self.retry_after}
        subscription = params["subscription_id"]
        if subscription not in self.groups:
            return 404, _error("SubscriptionNotFound", f"The subscription '{subscription}' could not be found."), {}
        group = params.get("resource_group_name")
        if group is not None and group.lower() not in self.groups[subscription]:
            return 404, _error("ResourceGroupNotFound", f"Resource group '{group}' could not be found."), {}
        scope = f"/subscriptions/{subscription}" + (f"/resourceGroups/{group}" if group else "")
        kind = "snapshots" if "_snapshots_" in operation else "disks"
        if (subscription, (group or "").lower()) in self.forbidden:
            return 403, _error("AuthorizationFailed", (
                f"The client '{CLIENT_ID}' with object id '{CLIENT_ID}' does not have authorization to perform action "
                f"'Microsoft.Compute/{kind}/read' over scope '{scope}' or the scope is invalid. If access was "
                "recently granted, please refresh your credentials.")), {}
        if operation == "build_snapshots_get_request":
            wanted = snapshot_id(subscription, group or "", params["snapshot_name"]).lower()
            held = [s for s in self.snapshots.get(subscription, []) if s["id"].lower() == wanted]
            if not held:
                return 404, _error("ResourceNotFound", (
                    f"The Resource 'Microsoft.Compute/snapshots/{params['snapshot_name']}' under resource group "
                    f"'{group}' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix")), {}
            return 200, held[0], {}
        if operation.startswith("build_disks_") and operation != "build_disks_get_request":
            resources = self.disks[subscription]
        elif operation.startswith("build_snapshots_list"):
            resources = self.snapshots.get(subscription, [])
        else:  # the census reads no single disk: a request it never sends
            return 405, _error("MethodNotAllowed", f"{operation} is not served by this test server"), {}
        disks = sorted(resources, key=lambda d: d["id"].lower())
        if group is not None:
            disks = [d for d in disks if d["id"].split("/")[4].lower() == group.lower()]
        start = int(query.get(azure_models.CONTINUATION) or 0)
        page, rest = disks[start:start + self.page_size], disks[start + self.page_size:]
        body: dict[str, Any] = {"value": page}
        if rest:
            body["nextLink"] = (f"{self.endpoint}{quote(path)}?api-version={query['api-version']}"
                                f"&$skiptoken={start + self.page_size}")
        return 200, body, {}

    def listed(self) -> Iterable[str]:
        return [path for method, path, _ in self.requests if method == "GET"]
