"""Our JSONPath, custom-columns and --sort-by against the real kubectl, on the same PersistentVolumes.

kubectl reads the PVs from the real API server; we render the same objects (read with a raw GET and wrapped
as kubectl wraps them: a `List` with `resourceVersion: ""`, each item with its kind) and must print the same
bytes, and refuse a bad template with the same text after `error: `.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import Any

import pytest

from kubectl_pvleft.output.custom_columns import parse_custom_columns, parse_custom_columns_file, render_custom_columns
from kubectl_pvleft.output.jsonpath import JSONPathTemplate, TemplateError
from kubectl_pvleft.output.sorting import sort_rows
from scenarios import apply, host_path_pv, wait_for

SELECTOR = "jp-test=jsonpath"
LABELS = {"jp-test": "jsonpath"}


def pv(name: str, size: str, claim: tuple[str, str] | None, **spec: Any) -> dict:
    obj = host_path_pv(name, size=size, labels=dict(LABELS), claim=claim)
    obj["spec"].update(spec)
    return obj


@pytest.fixture(scope="module")
def pvs(cluster):
    objects = [
        pv("jp-b", "2Gi", ("jp-ns", "claim-b")),
        pv("jp-a", "500Mi", ("jp-ns", "claim-z"), mountOptions=["ro", "soft"]),
        pv("jp-d", "10Gi", ("jp-other", "claim-a")),
        pv("jp-c", "1Gi", None),
    ]
    objects[1]["metadata"]["labels"]["app.kubernetes.io/name"] = "web"
    objects[1]["metadata"]["annotations"] = {"note": "<b>caf\u00e9 & \u2028\"quoted\"\\</b>", "multi": "one\ntwo"}
    apply(cluster, *objects)
    names = sorted(o["metadata"]["name"] for o in objects)

    def all_available() -> bool:
        return [i.get("status", {}).get("phase") for i in api_items(cluster)] == ["Available"] * len(names)
    wait_for("the jp- PVs to be Available", all_available)
    yield names
    cluster.kubectl("delete", "pv", *names, "--wait=false", check=False)


def api_items(cluster) -> list[dict]:
    status, body = cluster.api("GET", "/api/v1/persistentvolumes?labelSelector=" + urllib.parse.quote(SELECTOR))
    assert status == 200, body
    return body["items"]


def as_kubectl_list(items: list[dict]) -> dict:
    """What `kubectl get` hands its printers: a List without a resourceVersion, each item with its kind."""
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
            "items": [{"apiVersion": "v1", "kind": "PersistentVolume", **item} for item in items]}


def same_as_kubectl(cluster, args: list[str], ours: Callable[[list[dict]], str]) -> None:
    """kubectl's stdout, or the text after its `error: `, equals ours on the objects it read.
    The PVs are quiet once Available; still, a write between the two reads is caught and retried."""
    for _ in range(3):
        before = api_items(cluster)
        result = cluster.kubectl("get", "pv", "-l", SELECTOR, *args, check=False)
        if [i["metadata"]["resourceVersion"] for i in api_items(cluster)] != \
                [i["metadata"]["resourceVersion"] for i in before]:
            continue
        try:
            expected = ours(before)
        except TemplateError as exc:
            assert result.returncode == 1, (args, result.stdout, result.stderr)
            assert result.stderr.startswith("error: "), result.stderr
            assert result.stderr[len("error: "):] == str(exc) + ("" if str(exc).endswith("\n") else "\n"), args
            return
        assert result.returncode == 0, (args, result.stderr)
        assert result.stdout == expected, args
        return
    pytest.fail("the PVs kept changing while kubectl read them")


JSONPATH_TEMPLATES = [
    "{.items[*].metadata.name}",
    '{range .items[*]}{.metadata.name}{"\\t"}{.spec.capacity.storage}{"\\t"}{.status.phase}{"\\n"}{end}',
    "{.items[0].spec}",
    "{.items[-1:].metadata.name} {.items[1:3].metadata.name} {.items[::2].metadata.name}",
    '{.items[?(@.spec.capacity.storage=="2Gi")].metadata.name}',
    "{.items[?(@.spec.mountOptions)].spec.mountOptions[*]}",
    "{..claimRef.name}",
    "{.items[*].metadata.labels.app\\.kubernetes\\.io/name}",
    "{.items[*].metadata.labels['app.kubernetes.io/name']}",
    "{.items[*].metadata.annotations}",
    "{.items[*].metadata.annotations.note}",
    "{.kind} {.apiVersion} {.metadata} {.items[0].kind} {.items[0].spec.nope}|{.}|",
    "{$.items[0].metadata.name} {@.items[1].metadata.name} {'x'}{5}{1.5}{true}",
    "{range .items[*]}{range .spec.accessModes[*]}{@}/{end}{.spec.claimRef.namespace}{end}",
    "{range .items[*]}[{.metadata.name}]",
    ".items[*].metadata.name",
    "{.items[0].spec.capacity.storage.*}",
]

BAD_JSONPATH_TEMPLATES = [
    "{.items[",
    "{.items[0].metadata.name",
    "{.items[?(@.x==\"y\")",
    "{.items[x]}",
    "{%}",
    "{....a}",
    '{"\\q"}',
    "{end}",
    "{.items[99]}",
    "{.items[0].spec.capacity.storage[0]}",
    '{.items[?(@.spec.capacity.storage>1)]}',
]


@pytest.mark.parametrize("template", JSONPATH_TEMPLATES + BAD_JSONPATH_TEMPLATES)
def test_jsonpath_prints_what_kubectl_prints(cluster, pvs, template: str) -> None:
    same_as_kubectl(cluster, ["-o", "jsonpath=" + template],
                    lambda items: JSONPathTemplate(template).render(as_kubectl_list(items)))


@pytest.mark.parametrize("template", [*JSONPATH_TEMPLATES[:6], "{.items[", "{.items[7]}"])
def test_jsonpath_as_json_prints_what_kubectl_prints(cluster, pvs, template: str) -> None:
    same_as_kubectl(cluster, ["-o", "jsonpath-as-json=" + template],
                    lambda items: JSONPathTemplate(template).render_json(as_kubectl_list(items)))


CUSTOM_COLUMNS = [
    "NAME:.metadata.name,CAPACITY:.spec.capacity.storage,CLAIM:.spec.claimRef.name,PHASE:.status.phase",
    "NAME:metadata.name,MODES:{.spec.accessModes},OPTIONS:{spec.mountOptions},CAP:.spec.capacity",
    "N:.metadata.name,LABELS:.metadata.labels,NOTE:.metadata.annotations.note,EMPTY:",
    "NAME:.metadata.name,FIRST:.spec.mountOptions[0],ALL:.spec.mountOptions[*],BYTES:.metadata.name.*",
    "NOTE:.metadata.annotations.multi,NAME:.metadata.name",
    "A",
    "A:.x,B",
    "A:{.a}{.b}",
    "A:.spec.accessModes[5]",
]


@pytest.mark.parametrize("spec", CUSTOM_COLUMNS)
def test_custom_columns_print_what_kubectl_prints(cluster, pvs, spec: str) -> None:
    same_as_kubectl(cluster, ["-o", "custom-columns=" + spec],
                    lambda items: render_custom_columns(parse_custom_columns(spec), items))


def test_custom_columns_file_prints_what_kubectl_prints(cluster, pvs, tmp_path) -> None:
    spec = "NAME   CLAIM\t CAP\n{.metadata.name}  .spec.claimRef.name spec.capacity.storage\n"
    path = tmp_path / "columns.txt"
    path.write_text(spec)
    same_as_kubectl(cluster, ["-o", f"custom-columns-file={path}"],
                    lambda items: render_custom_columns(parse_custom_columns_file(spec), items))


SORTS = [".spec.capacity.storage", "{.metadata.name}", "metadata.creationTimestamp", ".spec.claimRef.name",
         ".spec.claimRef.namespace", ".spec.nope", ".spec.capacity[", "{.a}{.b}", ".spec.accessModes"]


@pytest.mark.parametrize("field", SORTS)
def test_sort_by_orders_as_kubectl(cluster, pvs, field: str) -> None:
    def names(items: list[dict]) -> str:
        return "".join(f"persistentvolume/{i['metadata']['name']}\n" for i in sort_rows(items, field))
    if field == ".spec.accessModes":
        # kubectl exits through klog with a timestamped line here; we raise with its message.
        result = cluster.kubectl("get", "pv", "-l", SELECTOR, f"--sort-by={field}", "-o", "name", check=False)
        with pytest.raises(TemplateError) as raised:
            names(api_items(cluster))
        assert result.returncode != 0 and str(raised.value) in result.stderr, result.stderr
        return
    same_as_kubectl(cluster, [f"--sort-by={field}", "-o", "name"], names)


def test_sort_by_capacity_is_quantity_aware_like_kubectl(cluster, pvs) -> None:
    spec = "NAME:.metadata.name,CAPACITY:.spec.capacity.storage"
    same_as_kubectl(cluster, ["--sort-by=.spec.capacity.storage", "-o", "custom-columns=" + spec],
                    lambda items: render_custom_columns(parse_custom_columns(spec),
                                                        sort_rows(items, ".spec.capacity.storage")))
    ordered = [i["spec"]["capacity"]["storage"] for i in sort_rows(api_items(cluster), ".spec.capacity.storage")]
    assert ordered == ["500Mi", "1Gi", "2Gi", "10Gi"]
