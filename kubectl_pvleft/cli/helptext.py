"""What each subcommand's --help shows after its flags: examples (real commands, one line each) and a legend of
the values its state columns can take. Plain text, so --help imports no analysis; a test holds each legend to
the analysis's own constants and runs every example through the parser."""

from __future__ import annotations

EXAMPLES: dict[str, tuple[str, ...]] = {
    "leftovers": (
        "kubectl pvleft leftovers",
        "kubectl pvleft leftovers mariadb-pv -o wide",
        "kubectl pvleft leftovers --all -n shop",
        "kubectl pvleft leftovers --exit-code -o junit > pvleft.xml",
        "kubectl pvleft leftovers --all-contexts -o markdown",
    ),
    "pending": (
        "kubectl pvleft pending -A",
        "kubectl pvleft pending web-0 -n shop",
        "kubectl pvleft pending -n shop -o wide",
        "kubectl pvleft pending -A -w",
    ),
    "classes": (
        "kubectl pvleft classes",
        "kubectl pvleft classes standard premium-rwo",
        "kubectl pvleft classes --drift",
        "kubectl pvleft classes -o markdown",
    ),
    "claims": (
        "kubectl pvleft claims -A",
        "kubectl pvleft claims orders -n shop -o wide",
        "kubectl pvleft claims --all -n shop",
        "kubectl pvleft claims -A --exit-code -o junit > claims.xml",
    ),
    "snapshots": (
        "kubectl pvleft snapshots",
        "kubectl pvleft snapshots snapcontent-1234 -o wide",
        "kubectl pvleft snapshots --all -o json",
    ),
    "attachments": (
        "kubectl pvleft attachments",
        "kubectl pvleft attachments csi-8d3c1f -o wide",
        "kubectl pvleft attachments --all -o json",
        "kubectl pvleft attachments --older-than 30m --exit-code -o junit > attachments.xml",
        "kubectl pvleft attachments -w",
    ),
    "why": (
        "kubectl pvleft why pod/web-0 -n shop",
        "kubectl pvleft why pvc/orders -n shop -o json",
        "kubectl pvleft why pv/pvc-0b1f2c3d",
        "kubectl pvleft why volumesnapshotcontent/snapcontent-1234",
    ),
    "serve": (
        "kubectl pvleft serve",
        "kubectl pvleft serve --listen 127.0.0.1:9479 --stale-after 5m",
        "kubectl pvleft serve -n shop --max-finding-series 200",
    ),
    "mcp": (
        "kubectl pvleft mcp",
        "kubectl pvleft mcp --context prod -n shop",
        "kubectl pvleft mcp --request-timeout 30s",
    ),
}

LEGENDS: dict[str, tuple[tuple[str, str], ...]] = {
    "leftovers": (
        ("STATUS", "the PV's phase: Released, Failed (leftovers), Bound, Available, Pending (with --all or a NAME); "
                   "Terminating (deleted, and a finalizer holds it: a finding; -o wide's HELD BY says which, the "
                   "claim still bound to it or the provisioner whose delete fails, with its VolumeFailedDelete event)"),
        ("CLAIM STATE", "missing (the claim is gone), replaced (a new claim took its name), present, pre-bound, "
                        "waiting for claim NS/NAME (reserved for a claim not created yet: never a finding), unknown "
                        "(claims cannot be read), <none> (no claimRef)"),
        ("CLASS RECLAIM", "Delete, Retain, Recycle; <none> (no class), <missing> (the class is gone), <unknown> "
                          "(classes cannot be read)"),
    ),
    "pending": (
        ("OWNER", "who must act: kube-scheduler, persistentvolume-controller, attachdetach-controller, kubelet, "
                  "ephemeral-volume-controller, a CSI provisioner's or attacher's name, pod-spec (the Pod's own spec "
                  "blocks it), unknown"),
        ("REASON", "the event or condition reason that shows the blocker (FailedScheduling, ProvisioningFailed, "
                   "FailedAttachVolume, FailedMount, ...), NoSignal when nothing explains it"),
        ("MESSAGE", "what is wrong and who must act, cut between clauses; -o wide and JSON have all of it"),
    ),
    "classes": (
        ("FINDINGS", "multiple-defaults, missing-class (Pending claims or provisioned PVs name a class that does "
                     "not exist; static PVs need none), missing-csidriver, reclaim-drift (provisioned PVs only); "
                     "<none>"),
        ("PROVISIONERTYPE", "csi, in-tree, external, none (kubernetes.io/no-provisioner) (-o wide)"),
        ("CSIDRIVER", "registered, missing, <none> (not a CSI provisioner) (-o wide)"),
    ),
    "claims": (
        ("STATUS", "the claim's phase: Pending, Bound, Lost; Terminating once deleted"),
        ("PROBLEM", "unused (Bound, no Pod that has not finished names it, and no workload will mount it "
                    "again; UNUSED SINCE says since when), terminating (deleted, and a finalizer holds it: WHY "
                    "names it and the Pods that still name the claim), "
                    "pending, lost, resizing, resize-failed, resize-error, resize-not-started, modify-not-started "
                    "(spec.volumeAttributesClassName differs from the volume's class, and no modification has "
                    "started), modify-pending (with whether its class exists), "
                    "modifying, modify-infeasible, modify-error, unhealthy, selinux-conflict (Pods that share "
                    "the volume, whose CSIDriver sets seLinuxMount: true, have conflicting SELinux labels or "
                    "seLinuxChangePolicy: on one node only one of them can mount it), unknown (a value this version does not "
                    "know, with where it is). A claim annotated pvleft.io/keep is never in trouble; with "
                    "--older-than, unused and pending count only once they have lasted that long"),
        ("WHY", "why a Pending claim is Pending: its latest event (and, for a WaitForFirstConsumer claim a Pod "
                "uses, that the Pod bypassed the scheduler), else what its own fields say; for a claim being deleted, "
                "the finalizer that holds it and who must act"),
        ("BY DESIGN", "(--all) for a claim no Pod mounts: the workload that will mount it again, never a problem "
                      "(a StatefulSet scaled down under whenScaled Retain, a Deployment, ReplicaSet, DaemonSet, "
                      "unfinished Job or CronJob naming it); unknown (why) when a workload list may not be read"),
    ),
    "snapshots": (
        ("SNAPSHOT STATE", "missing (the VolumeSnapshot is gone), replaced (a new one took its name), present, "
                           "unknown (snapshots cannot be read)"),
        ("FINDINGS", "terminating (deleted, and a finalizer holds it: -o wide's HELD BY says which and who must act, "
                     "with the delete's status.error), retained-orphan, class-missing, not-ready; <none>"),
        ("CLOUD SNAPSHOT", "(with a cloud census's flags) the snapshot in the cloud: source, stored size (?GiB when "
                           "the cloud does not say it), tier, location; <missing> (the cloud says it does not exist: "
                           "a missing-snapshot finding), <unknown>"),
    ),
    "attachments": (
        ("NAME", "volumeattachment/NAME (an attachment) or csinode/NODE (a node's registered drivers and limits)"),
        ("NODE STATE", "Ready, NotReady, Unknown (the kubelet stopped reporting), missing (the node is gone); "
                       "<unknown> (nodes cannot be read)"),
        ("FINDINGS", "attach-error, detach-error (the attacher's status.attachError/detachError), detach-held "
                     "(deleted, held by the external-attacher/<driver> finalizer), node-missing, node-not-ready, "
                     "pv-missing, driver-not-registered (the node's CSINode lacks a driver its attachments use), "
                     "attach-limit, near-attach-limit (attachments of a driver against CSINode allocatable.count; "
                     "near: within a tenth); <none>"),
        ("OWNER", "who must act: external-attacher of DRIVER, node/NODE (with the driver's node plugin), "
                  "persistentvolume/PV"),
        ("ATTACHMENTS/LIMIT", "(-o wide, node rows) DRIVER:ATTACHMENTS/ALLOCATABLE per driver; - when it sets no "
                              "limit"),
    ),
}

NEXT_LEGEND = ("NEXT", "(-o wide; `next` in JSON) read-only commands to look at next: kubectl describe, kubectl get "
                       "events. pvleft never suggests a change: a human decides")


def wrapped(text: str, indent: int, width: int = 110) -> str:
    """Words on lines of at most ``width``, the lines after the first indented (textwrap costs start-up)."""
    lines, line = [], ""
    for word in text.split():
        if line and indent + len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return ("\n" + " " * indent).join([*lines, line])


def legend(command: str) -> str:
    """The values a subcommand's state columns can take, one column a line ('' for serve: it prints no table; its
    metrics are in docs/serve.md)."""
    if command not in LEGENDS:
        return ""
    width = max(len(header) for header, _ in (*LEGENDS[command], NEXT_LEGEND))
    return "\n".join(f"  {header.ljust(width)}  {wrapped(text, width + 4)}"
                     for header, text in (*LEGENDS[command], NEXT_LEGEND))
