"""The promise that matters most: every request the plugin sent, across all subcommands, was get, list or watch.

The API server's audit log is the witness. The plugin's requests carry its User-Agent; everything the
tests themselves write (as admin, with kubectl) carries kubectl's.
"""

from __future__ import annotations

import signal
import subprocess
import time

from plugin_runner import PLUGIN, run_plugin

USER_AGENT = "kubectl-pvleft/"


def plugin_audit_events(cluster) -> list[dict]:
    events = cluster.audit_events(USER_AGENT)
    return [e for e in events if e.get("userAgent", "").startswith(USER_AGENT)]


def test_every_subcommand_only_reads(cluster, tmp_path) -> None:
    reader = cluster.kubeconfig("reader")
    for args in (["leftovers"], ["leftovers", "--all", "-o", "json"], ["pending", "-A"], ["pending", "-A", "-o", "json"],
                 ["classes"], ["classes", "--drift"], ["claims", "-A", "--all"], ["claims", "-n", "default"]):
        result = run_plugin(reader, *args)
        assert result.returncode == 0, (args, result.stderr)
    run_plugin(reader, "leftovers", "--as", "pvleft-pvonly-user")  # 403s are answers, still reads
    watcher = subprocess.Popen([PLUGIN, "pending", "-A", "--watch", "--kubeconfig", str(reader)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(4)
    watcher.send_signal(signal.SIGINT)
    _, stderr = watcher.communicate(timeout=30)
    assert watcher.returncode == 130 and "Traceback" not in stderr

    events = plugin_audit_events(cluster)
    verbs = {e["verb"] for e in events}
    assert verbs <= {"get", "list", "watch"}, sorted(verbs)
    assert {"list", "watch"} <= verbs
    resources = {(e.get("objectRef") or {}).get("resource") for e in events}
    assert {"persistentvolumes", "persistentvolumeclaims", "storageclasses", "pods", "events"} <= resources
    # Nothing the plugin sent was a write, whoever it ran as, in this test or in any earlier one.
    assert all(e["requestURI"].split("?")[0] and e["verb"] in ("get", "list", "watch") for e in events)
