"""The Containerfile, deploy/ and the release workflow's image job agree on the runtime contract: the same
non-root uid and gid, a read-only root filesystem, the port serve listens on, an entrypoint that needs no shell.
tests/test_container_cluster.py runs what the Containerfile builds under that contract."""

from __future__ import annotations

import re

import yaml

from container_root import BASE_ARG, CONTAINERFILE, ROOT, exec_form, parse
from kubectl_pvleft.cli.serve import DEFAULT_LISTEN

DEPLOY = ROOT / "deploy"
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def final_stage():
    return parse(CONTAINERFILE.read_text())[1][-1]


def pod_spec() -> dict:
    return yaml.safe_load((DEPLOY / "base" / "deployment.yaml").read_text())["spec"]["template"]["spec"]


def chart_values() -> dict:
    return yaml.safe_load((DEPLOY / "helm" / "kubectl-pvleft" / "values.yaml").read_text())


def test_the_stages_share_one_base_and_the_final_copies_from_the_build_stage() -> None:
    args, (build, final) = parse(CONTAINERFILE.read_text())
    # One base, python:3.12-slim unless the build says otherwise (the test passes its stand-in so): the venv's
    # python is a symlink to the base's interpreter, which the final stage must have at the same path.
    assert args == [f"{BASE_ARG}=python:3.12-slim"] and build.base == final.base == "${" + BASE_ARG + "}"
    assert final.one("COPY").split()[0] == f"--from={build.name}"


def test_nothing_needs_a_shell_to_build_or_to_run() -> None:
    _, (build, final) = parse(CONTAINERFILE.read_text())
    for instruction in [*build.all("RUN"), *final.all("RUN"), final.one("ENTRYPOINT"), final.one("CMD")]:
        exec_form(instruction)


def test_the_image_user_is_the_deployments_non_root_uid_and_gid() -> None:
    uid, _, gid = final_stage().one("USER").partition(":")
    assert uid.isdigit() and gid.isdigit() and int(uid) != 0  # numeric: runAsNonRoot cannot check a user name
    context = pod_spec()["securityContext"]
    assert context["runAsNonRoot"] is True
    assert (context["runAsUser"], context["runAsGroup"]) == (int(uid), int(gid))
    assert chart_values()["podSecurityContext"] == context  # the chart's default is the base's


def test_the_container_has_a_read_only_root_and_no_way_to_gain_privileges() -> None:
    context = pod_spec()["containers"][0]["securityContext"]
    assert context == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}
    assert "volumes" not in pod_spec()  # no writable emptyDir either: the exporter needs no disk at all
    assert chart_values()["securityContext"] == context


def test_exposed_port_is_where_serve_listens_and_what_deploy_names() -> None:
    (exposed,) = final_stage().one("EXPOSE").split()
    assert f":{exposed}" == DEFAULT_LISTEN
    container = pod_spec()["containers"][0]
    assert f"--listen=:{exposed}" in container["args"]
    assert [p["containerPort"] for p in container["ports"]] == [int(exposed)]
    service = yaml.safe_load((DEPLOY / "base" / "service.yaml").read_text())
    assert [p["port"] for p in service["spec"]["ports"]] == [int(exposed)]
    values = yaml.safe_load((DEPLOY / "helm" / "kubectl-pvleft" / "values.yaml").read_text())
    assert values["port"] == int(exposed)


def test_the_entrypoint_is_exec_form_on_the_venvs_path_and_cmd_is_what_deploy_runs() -> None:
    final = final_stage()
    entrypoint, cmd = exec_form(final.one("ENTRYPOINT")), exec_form(final.one("CMD"))
    path = re.search(r"PATH=(\S+)", final.one("ENV"))
    assert path and entrypoint[0].rsplit("/", 1)[0] == path.group(1).split(":")[0]
    assert cmd == ["serve"] and pod_spec()["containers"][0]["args"][0] == "serve"


def test_the_release_job_checks_the_same_user_and_publishes_only_with_the_image() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    check = next(s["run"] for s in workflow["jobs"]["image"]["steps"] if "non-root" in s.get("name", ""))
    assert f'= "{final_stage().one("USER")}"' in check
    # The Deployment names the release's image: the release is published only once the image is pushed.
    assert "image" in workflow["jobs"]["manifest"]["needs"]
