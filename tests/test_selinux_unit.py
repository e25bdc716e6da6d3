"""The SELinux pre-flight's pure rules (analyses/pending/selinux.py), on Pods in the API's shape: what the 1.37
selinux-warning-controller computes (the cluster test holds them to the controller's own events)."""

from __future__ import annotations

from typing import Any

from kubectl_pvleft.analyses.pending.selinux import RECURSIVE, mount_context
from kubectl_pvleft.records.pods import Pod


def pod(pod_options: dict[str, str] | None, containers: list[tuple[dict[str, str] | None, bool]],
        policy: str | None = None) -> Pod:
    context: dict[str, Any] = {}
    if pod_options is not None:
        context["seLinuxOptions"] = pod_options
    if policy:
        context["seLinuxChangePolicy"] = policy
    return Pod.from_wire({"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": {
        "securityContext": context,
        "containers": [{"name": f"c{i}", **({"securityContext": {"seLinuxOptions": o}} if o else {}),
                        "volumeMounts": [{"name": "data", "mountPath": "/d"}] if mounts else []}
                       for i, (o, mounts) in enumerate(containers)],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "shared"}}]}})


def test_each_containers_options_over_the_pods() -> None:
    """volumeutil.GetPodVolumeNames: a container's seLinuxOptions fields over the Pod's; the translator joins the
    four parts as set, with no defaults (ControllerSELinuxTranslator.SELinuxOptionsToFileLabel)."""
    assert mount_context(pod({"level": "s0:c1"}, [({"type": "spc_t"}, True)]), "data", True) == (
        "::spc_t:s0:c1", "MountOption")
    # A container that does not mount the volume does not count.
    assert mount_context(pod({"level": "s0:c1"}, [({"level": "s0:c9"}, False), (None, True)]), "data", True) == (
        ":::s0:c1", "MountOption")


def test_disagreeing_containers_are_the_pods_own_error_and_recursive_is_empty() -> None:
    """GetMountSELinuxLabel: MultipleSELinuxLabels within one Pod is no conflict with another; syncVolume: a
    Recursive Pod, a driver without -o context, or an empty label is Recursive with an empty label."""
    assert mount_context(pod(None, [({"level": "s0:c1"}, True), ({"level": "s0:c2"}, True)]), "data", True) is None
    assert mount_context(pod({"level": "s0:c1"}, [(None, True)], RECURSIVE), "data", True) == ("", RECURSIVE)
    assert mount_context(pod({"level": "s0:c1"}, [(None, True)]), "data", False) == ("", RECURSIVE)
    assert mount_context(pod(None, [(None, True)]), "data", True) == ("", RECURSIVE)


def test_the_census_compares_each_pair_once_and_only_on_a_context_mount_driver() -> None:
    """cache/volumecache.go AddVolume: a Pod is compared with every other on the same volume; the census lists each
    pair once (the controller's two events, one per Pod, are one pair). A finished Pod no longer counts (``sync``);
    a driver without seLinuxMount: true mounts nothing with -o context, so nothing conflicts."""
    from kubectl_pvleft.analyses.pending.selinux import LABEL_CONFLICT, pair_conflicts, sharing
    from kubectl_pvleft.records import PersistentVolume

    def named(name: str, level: str, phase: str = "Running") -> Pod:
        return Pod.from_wire({"metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}"}, "spec": {
            "securityContext": {"seLinuxOptions": {"level": level}},
            "containers": [{"name": "c", "volumeMounts": [{"name": "data", "mountPath": "/d"}]}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "shared"}}]}, "status": {"phase": phase}})

    users = sharing([named("c", "s0:c1"), named("a", "s0:c1"), named("b", "s0:c2"), named("done", "s0:c9", "Succeeded")])
    assert [p.name for p, _ in users[("ns", "shared")]] == ["a", "b", "c"]
    volume = PersistentVolume.from_wire({"metadata": {"name": "pv"}, "spec": {"csi": {"driver": "d", "volumeHandle": "h"}}})
    found = pair_conflicts(users[("ns", "shared")], volume, frozenset({"d"}))
    assert [(c.reason, c.pod, c.other_pod) for c in found] == [(LABEL_CONFLICT, "a", "b"), (LABEL_CONFLICT, "b", "c")]
    assert pair_conflicts(users[("ns", "shared")], volume, frozenset({"other"})) == ()
    assert sharing([named("a", "s0:c1")]) == {}
