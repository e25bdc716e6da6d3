"""The shipped alerts, proven by Prometheus' own tool: `promtool check rules` on the plain file and on the
PrometheusRule's groups, and `promtool test rules` with each alert firing and not firing on written series."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not shutil.which("promtool"), reason="needs promtool (apt-get install prometheus)")]

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
RULES = DEPLOY / "rules" / "pvleft.rules.yaml"


def promtool(*args: str, cwd: Path = DEPLOY) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", *args], check=False, capture_output=True, text=True, cwd=cwd)


def test_the_rules_files_are_valid(tmp_path: Path) -> None:
    checked = promtool("check", "rules", str(RULES))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 12 rules found" in checked.stdout
    operator = yaml.safe_load((DEPLOY / "monitoring" / "prometheusrule.yaml").read_text())
    groups = tmp_path / "from-prometheusrule.yaml"
    groups.write_text(yaml.safe_dump(operator["spec"]))
    checked = promtool("check", "rules", str(groups))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_every_alert_fires_and_stays_quiet_where_it_should() -> None:
    tested = promtool("test", "rules", "pvleft.rules.test.yaml", cwd=DEPLOY / "rules")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    alerts = {r["alert"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]}
    cases = yaml.safe_load((DEPLOY / "rules" / "pvleft.rules.test.yaml").read_text())["tests"]
    firing = {c["alertname"] for t in cases for c in t["alert_rule_test"] if c["exp_alerts"]}
    quiet = {c["alertname"] for t in cases for c in t["alert_rule_test"] if not c["exp_alerts"]}
    assert firing == alerts  # every alert is shown firing at least once
    assert len(quiet) >= 6


def test_a_broken_rule_fails_its_test(tmp_path: Path) -> None:
    """The promtool test can fail: the stream alert without its `readable` guard fires for an unreadable stream."""
    broken = RULES.read_text().replace("pvleft_stream_up == 0 and pvleft_stream_readable == 1", "pvleft_stream_up == 0")
    assert broken != RULES.read_text()
    (tmp_path / "pvleft.rules.yaml").write_text(broken)
    shutil.copy(DEPLOY / "rules" / "pvleft.rules.test.yaml", tmp_path)
    tested = promtool("test", "rules", "pvleft.rules.test.yaml", cwd=tmp_path)
    assert tested.returncode != 0 and "PvleftStreamDown" in tested.stdout + tested.stderr


def test_a_pod_pending_on_cpu_does_not_fire_the_storage_alert(tmp_path: Path) -> None:
    """The alert as it was (every pending finding) fires for api-0, Pending on CPU: the promtool test catches it."""
    old = 'pvleft_finding_info{analysis="pending"} == 1'
    broken = RULES.read_text().replace("pvleft_pending_on_storage == 1", old)
    assert old in broken
    (tmp_path / "pvleft.rules.yaml").write_text(broken)
    shutil.copy(DEPLOY / "rules" / "pvleft.rules.test.yaml", tmp_path)
    tested = promtool("test", "rules", "pvleft.rules.test.yaml", cwd=tmp_path)
    assert tested.returncode != 0 and "api-0" in tested.stdout + tested.stderr


def test_every_alert_links_its_runbook_page() -> None:
    """Each alert's runbook_url names a page of docs/runbooks that exists, says what the alert means and gives
    read-only commands to look (get, describe, logs, auth can-i, the plugin: nothing that changes the cluster)."""
    import re

    docs = DEPLOY.parent / "docs" / "runbooks"
    for group in yaml.safe_load(RULES.read_text())["groups"]:
        for rule in group["rules"]:
            url = rule["annotations"]["runbook_url"]
            assert url.endswith(f"/docs/runbooks/{rule['alert']}.md"), url
            page = (docs / f"{rule['alert']}.md").read_text()
            assert page.startswith(f"# {rule['alert']}\n") and "## What it means" in page and "## Look" in page
            commands = re.findall(r"^(kubectl [^\n]*)$", page, re.MULTILINE)
            assert commands, rule["alert"]
            for command in commands:
                verb = command.split()[1]
                assert verb in {"get", "describe", "logs", "auth", "pvleft", "top", "events"}, command
