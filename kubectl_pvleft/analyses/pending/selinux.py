"""SELinux pre-flight (pure): Pods that share a volume whose CSI driver mounts with ``-o context`` (CSIDriver
``seLinuxMount: true``, the SELinuxMount behaviour GA in 1.37) must agree on the volume's SELinux label and on
``seLinuxChangePolicy``; otherwise only one of them can run with it on a node.

The rules are kube-controller-manager's selinux-warning-controller's (kubernetes/kubernetes
pkg/controller/volume/selinuxwarning):
- the label of a volume in a Pod (``syncPod``: volumeutil.GetPodVolumeNames and GetMountSELinuxLabel): the
  seLinuxOptions of every container that mounts it, each container's fields over the Pod's, joined
  ``user:role:type:level`` without defaults (translator.ControllerSELinuxTranslator.SELinuxOptionsToFileLabel);
  containers that disagree are the Pod's own error (MultipleSELinuxLabels), not a conflict with another Pod;
- the change policy (``syncVolume``): the Pod's seLinuxChangePolicy, MountOption when unset; Recursive when the
  driver does not mount with -o context or the label is empty (a Recursive Pod's mount label is empty);
- a conflict (cache/volumecache.go ``AddVolume``): two Pods on the same volume with different change policies, or
  with different labels. In 1.37 the labels are compared as strings (a Recursive Pod's empty label differs from
  any other: the 1.37.2 controller on the test plane reports it so); upstream's later translator ``Conflicts``
  compares only the parts both set, and is not what a 1.37 cluster says.
Finished Pods (Succeeded, Failed) no longer count (``sync``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Optional

from msgspec import Struct

from kubectl_pvleft.records import PersistentVolume, PersistentVolumeClaim
from kubectl_pvleft.records.pods import Pod, SELinuxOptions

MOUNT_OPTION, RECURSIVE = "MountOption", "Recursive"
LABEL_CONFLICT, POLICY_CONFLICT = "SELinuxLabelConflict", "SELinuxChangePolicyConflict"  # the controller's reasons


class Conflict(Struct, frozen=True):
    reason: str  # LABEL_CONFLICT or POLICY_CONFLICT, as the controller's events say
    claim: str
    other_pod: str
    value: str  # this Pod's label or policy
    other_value: str

    def text(self) -> str:
        what = "SELinux label" if self.reason == LABEL_CONFLICT else "seLinuxChangePolicy"
        return (f'{self.reason}: claim "{self.claim}" is shared with Pod {self.other_pod}, whose {what} '
                f'"{self.other_value}" conflicts with this Pod\'s "{self.value}": on one node only one of them can '
                "mount it (its CSIDriver sets seLinuxMount: true)")


def _merged(pod: Optional[SELinuxOptions], container: Optional[SELinuxOptions]) -> Optional[SELinuxOptions]:
    if container is None:
        return pod
    if pod is None:
        return container
    return SELinuxOptions(container.user or pod.user, container.role or pod.role, container.type or pod.type,
                          container.level or pod.level)


def file_label(options: Optional[SELinuxOptions]) -> str:
    """ControllerSELinuxTranslator.SELinuxOptionsToFileLabel: the parts as set, no defaults; all unset is ""."""
    if options is None:
        return ""
    label = ":".join((options.user, options.role, options.type, options.level))
    return "" if label == ":::" else label


def labels_conflict(a: str, b: str) -> bool:
    """1.37's volumecache AddVolume: ``otherPodInfo.seLinuxLabel != label``."""
    return a != b


def mount_context(pod: Pod, volume: str, context_mount: bool) -> Optional[tuple[str, str]]:
    """(label, change policy) of one of the Pod's volumes as the controller computes them; None when no container
    mounts it or its containers disagree (the Pod's own MultipleSELinuxLabels)."""
    pod_context = pod.spec.security_context
    pod_options = pod_context.se_linux_options if pod_context else None
    labels = {file_label(_merged(pod_options, c.security_context.se_linux_options if c.security_context else None))
              for c in (*(pod.spec.init_containers or ()), *(pod.spec.containers or ()))
              if any(m.name == volume for m in c.volume_mounts or ())}
    if len(labels) != 1:
        return None
    policy = (pod_context.se_linux_change_policy if pod_context else None) or MOUNT_OPTION
    label = labels.pop() if context_mount and policy != RECURSIVE else ""
    if not context_mount or not label:
        policy = RECURSIVE
    return label, policy


def _claim_volumes(pod: Pod) -> dict[str, str]:
    """claim name -> the Pod's volume name for it."""
    return {v.persistent_volume_claim.claim_name: v.name for v in pod.spec.volumes if v.persistent_volume_claim}


def _compare(mine: tuple[str, str], theirs: tuple[str, str]) -> list[tuple[str, str, str]]:
    """(reason, this value, the other's value) for each way two mount contexts of one volume conflict."""
    found = []
    if theirs[1] != mine[1]:
        found.append((POLICY_CONFLICT, mine[1], theirs[1]))
    if labels_conflict(mine[0], theirs[0]):
        found.append((LABEL_CONFLICT, mine[0], theirs[0]))
    return found


def conflicts(pod: Pod, pods: Iterable[Pod], claims: Mapping[tuple[str, str], PersistentVolumeClaim],
              volumes: Mapping[str, PersistentVolume], context_mount_drivers: frozenset[str]) -> list[Conflict]:
    """Pure: the conflicts of one Pod with the other Pods that mount the same volume (the same bound claim), where
    the volume's CSI driver sets seLinuxMount: true."""
    found: list[Conflict] = []
    others = [p for p in pods if p.namespace == pod.namespace and p.meta.uid != pod.meta.uid
              and p.phase not in ("Succeeded", "Failed")]
    for claim_name, volume_name in sorted(_claim_volumes(pod).items()):
        pvc = claims.get((pod.namespace, claim_name))
        pv = volumes.get(pvc.volume_name or "") if pvc is not None else None
        if pv is None or not pv.csi or pv.driver not in context_mount_drivers:
            continue
        mine = mount_context(pod, volume_name, True)
        if mine is None:
            continue
        for other in sorted(others, key=lambda p: p.name):
            other_volume = _claim_volumes(other).get(claim_name)
            theirs = mount_context(other, other_volume, True) if other_volume else None
            if theirs is None:
                continue
            found += [Conflict(reason, claim_name, other.name, value, other_value)
                      for reason, value, other_value in _compare(mine, theirs)]
    return found


def preflight(pending: Sequence[Pod], pods: Iterable[Pod], claims: Mapping[tuple[str, str], PersistentVolumeClaim],
              volumes: Mapping[str, PersistentVolume], context_mount_drivers: frozenset[str]) -> dict[str, tuple[Conflict, ...]]:
    """Each Pending Pod's conflicts, by uid (only Pods that have some)."""
    everyone = list(pods)
    found = {p.meta.uid: tuple(conflicts(p, everyone, claims, volumes, context_mount_drivers)) for p in pending}
    return {uid: c for uid, c in found.items() if c}


# -- the census: every volume shared by Pods whose contexts conflict -------------------------------------------

class PairConflict(Struct, frozen=True):
    """Two Pods on one claim that cannot mount it together, as the controller reports it (an event on each)."""

    reason: str  # LABEL_CONFLICT or POLICY_CONFLICT
    pod: str
    value: str  # pod's label or policy
    other_pod: str
    other_value: str

    def text(self) -> str:
        what = "SELinux labels" if self.reason == LABEL_CONFLICT else "seLinuxChangePolicy"
        return f'{self.reason}: Pod {self.pod} ("{self.value}") and Pod {self.other_pod} ("{self.other_value}") differ in {what}'


def sharing(pods: Iterable[Pod]) -> dict[tuple[str, str], list[tuple[Pod, str]]]:
    """(namespace, claim) -> the Pods that mount it and their volume's name, for each claim two or more Pods that
    have not finished name (the controller's ``sync`` forgets a Succeeded or Failed Pod)."""
    users: dict[tuple[str, str], list[tuple[Pod, str]]] = {}
    for pod in pods:
        if pod.phase in ("Succeeded", "Failed"):
            continue
        for claim_name, volume_name in _claim_volumes(pod).items():
            users.setdefault((pod.namespace, claim_name), []).append((pod, volume_name))
    return {key: sorted(found, key=lambda u: u[0].name) for key, found in users.items()
            if len(found) > 1}


def pair_conflicts(users: Sequence[tuple[Pod, str]], volume: Optional[PersistentVolume],
                   context_mount_drivers: frozenset[str]) -> tuple[PairConflict, ...]:
    """Pure: each pair of the claim's Pods (in name order, once) whose contexts conflict on its volume, when the
    volume's CSI driver sets seLinuxMount: true (cache/volumecache.go ``AddVolume``: the controller compares each
    Pod with every other on the same volume)."""
    if volume is None or not volume.csi or volume.driver not in context_mount_drivers:
        return ()
    contexts = [(pod, mount_context(pod, name, True)) for pod, name in users]
    known = [(pod, context) for pod, context in contexts if context is not None]
    found = []
    for index, (pod, mine) in enumerate(known):
        for other, theirs in known[index + 1:]:
            found += [PairConflict(reason, pod.name, value, other.name, other_value)
                      for reason, value, other_value in _compare(mine, theirs)]
    return tuple(found)
