"""boto3, the way every EBS call here uses it: each call bounded by the run's time, and the errors a failed call
raises. Imported only when a census, a snapshot look-up or a price list is asked for (boto3 is an extra)."""

from __future__ import annotations

from typing import Any


def bounded_config(timeout: float) -> Any:
    """botocore's Config for calls that must end within ``timeout`` seconds: no single call may outlast the run
    (connect within 10 s, read within 60 s, at most), three attempts in botocore's standard retry mode."""
    import botocore.config

    return botocore.config.Config(user_agent_extra="kubectl-pvleft", connect_timeout=min(10.0, timeout),
                                  read_timeout=min(60.0, timeout), retries={"mode": "standard", "max_attempts": 3})


def sdk_failures() -> tuple[type[Exception], ...]:
    """What boto3 raises for a failed call: its own errors, a reply that is not the service's XML (an HTML page
    from a proxy), and OSError from reading a credential file (IRSA's token), which it passes through."""
    import botocore.exceptions
    import botocore.parsers

    return (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError,
            botocore.parsers.ResponseParserError, OSError)
