"""Our "Did you mean this?" against kubectl 1.33's own on the same mistakes: kubectl's subcommand names fed to
our suggestion rule must give exactly the names kubectl suggests (cobra's SuggestionsFor, distance 2)."""

from __future__ import annotations

import os
import subprocess

import pytest

from kubectl_pvleft.cli.suggest import did_you_mean, suggestions

pytestmark = pytest.mark.integration

KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"
TYPOS = ("gett", "gte", "dlete", "xplain", "ap", "aply", "confg", "desc", "lgs", "rolout", "apii-resources", "ver",
         "versio", "c", "crate", "lable", "Get", "DESCRIBE", "tainted", "zzzzzz", "hepl", "por-forward")


def kubectl(*args: str) -> subprocess.CompletedProcess:
    if not os.path.exists(KUBECTL):
        pytest.fail(f"the kubectl oracle {KUBECTL} is missing")
    # An empty PATH: a typo must not be taken for a kubectl-<typo> plugin somewhere on this machine.
    return subprocess.run([KUBECTL, *args], check=False, capture_output=True, text=True, timeout=30,
                          env={"PATH": "", "HOME": "/"})


def kubectl_commands() -> list[str]:
    """kubectl's available subcommands (cobra's completion lists them, with its own help command)."""
    out = kubectl("__complete", "").stdout
    names = [line.split("\t")[0] for line in out.splitlines() if line and not line.startswith(":")]
    return [n for n in names if n != "help"]  # cobra never suggests its help command


def kubectl_suggestions(typo: str) -> tuple[str, list[str]]:
    result = kubectl(typo)
    assert result.returncode == 1 and result.stderr.startswith(f'error: unknown command "{typo}" for "kubectl"')
    block = result.stderr.split("\n", 1)[1]
    return block, [line.strip() for line in block.split("Did you mean this?\n")[-1].splitlines()
                   if line.startswith("\t")]


@pytest.mark.parametrize("typo", TYPOS)
def test_same_suggestions_as_kubectl(typo: str) -> None:
    commands = kubectl_commands()
    assert "get" in commands and len(commands) > 30
    block, theirs = kubectl_suggestions(typo)
    ours = suggestions(typo, commands)
    assert sorted(ours) == sorted(theirs), (typo, ours, theirs)
    # The same lines after the error line; kubectl orders the names as it declares its commands, we as ours.
    if ours:
        assert sorted(did_you_mean(ours).splitlines()) == sorted(block.splitlines())
    else:
        assert did_you_mean(ours) == "" and "Did you mean this?" not in block
