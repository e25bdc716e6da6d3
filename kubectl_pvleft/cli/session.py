"""One session: open the API for one context, run or follow one command there, describe what failed. The single
run, every context of a fleet and completion's namespace lookup all go through here, so what a run checks before
it reads (a kind that is not served, a credential plugin that wants a terminal) is checked the same everywhere.
"""

from __future__ import annotations

import threading
from collections.abc import Generator
from typing import TYPE_CHECKING, Optional, Union

from kubectl_pvleft.analyses import ANALYSES_BY_NAME
from kubectl_pvleft.errors import ApiError, Forbidden
from kubectl_pvleft.invocation import Analysis, Invocation, Options, Result, Row, SomeAnalysis

if TYPE_CHECKING:
    from kubectl_pvleft.kube.api import KubeAPI
    from kubectl_pvleft.kube.kubeconfig import Selection
    from kubectl_pvleft.kube.watch import Notice, RowChange, WatchSettings


def connect(selection: Selection, request_timeout: Optional[float], timeout_from_flag: bool,
            interactive: Optional[bool] = None, chunk_size: Optional[int] = None) -> tuple[KubeAPI, str]:
    """The API of the selected context, and that context's namespace. ``chunk_size``: the page every list is read
    in (kubectl's --chunk-size; 0: one answer); None: the default."""
    from kubectl_pvleft.kube.api import DEFAULT_PAGE_SIZE, KubeAPI
    from kubectl_pvleft.kube.kubeconfig import load_connection

    connection = load_connection(selection)
    api = KubeAPI(connection, request_timeout=request_timeout, timeout_from_flag=timeout_from_flag,
                  interactive=interactive, page_size=DEFAULT_PAGE_SIZE if chunk_size is None else chunk_size)
    return api, connection.namespace


class Session:
    """One command in one context. ``context`` None: the kubeconfig's (or --context's) own. ``interactive`` False:
    a credential plugin that wants a terminal fails this context at once (fleets never wait for a human); None:
    whether stdin is a terminal decides, as kubectl."""

    def __init__(self, invocation: Invocation, context: Optional[str] = None,
                 interactive: Optional[bool] = None) -> None:
        selection = invocation.selection
        if context is not None:
            from msgspec.structs import replace

            selection = replace(selection, context=context)
        self.invocation = invocation
        self.api, namespace = connect(selection, invocation.request_timeout, invocation.request_timeout is not None,
                                      interactive, invocation.chunk_size)
        self.options: Options = invocation.options(namespace).replace(context=self.api.connection.context)
        self._analysis: Optional[SomeAnalysis] = None

    @property
    def analysis(self) -> SomeAnalysis:
        """The command's analysis (the registry's, for these options), imported on first use (``why`` tells one
        story and never loads one)."""
        if self._analysis is None:
            self._analysis = ANALYSES_BY_NAME[self.invocation.command.name].load(self.options)
        return self._analysis

    def not_served(self) -> Optional[str]:
        """The line that says the kinds this command reads are not served here (no CRDs), or None."""
        return self.analysis.served(self.api)

    def run(self) -> Result:
        result = self.analysis.run(self.api, self.options)
        if self.invocation.names and result.not_served is None:
            from kubectl_pvleft.cli.names import narrow

            result = narrow(result, self.invocation, self.options, self.api)
        return result

    def follow(self, analysis: Analysis[Row], settings: WatchSettings, stop: Optional[threading.Event] = None
               ) -> Generator[Union[list[RowChange[Row]], Notice], None, None]:
        """Batches of row changes and notices until the streams fail; nothing when the kinds are not served
        (the caller asked ``not_served`` first). ``analysis``: this session's, as ``analysis.apply`` hands it over
        with its row type."""
        from kubectl_pvleft.kube.watch import follow

        return follow(self.api, analysis.follow(self.options), settings, stop)

    @property
    def requests(self) -> int:
        return self.api.transport.requests

    def close(self) -> None:
        self.api.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def describe_api_error(exc: ApiError) -> str:
    if exc.status == 401:
        return "You must be logged in to the server (Unauthorized)"
    if isinstance(exc, Forbidden):
        message = exc.api_message or "forbidden"
        # Refused impersonation (--as, or the kubeconfig's `as`): "cannot impersonate resource users", or with
        # constrained impersonation "cannot impersonate-on:user-info:list resource persistentvolumes". The
        # missing right is your own user's to impersonate, never get/list/watch on the resource named.
        if " cannot impersonate" in message:
            return (f"{message}; impersonating (--as, --as-group, --as-uid) needs your own user to be allowed to "
                    "impersonate them")
        from kubectl_pvleft.kube.api import KINDS

        resource = exc.details_kind or exc.path.rstrip("/").split("/")[-1]
        kind = KINDS.get(resource)
        hint = (f"kubectl pvleft needs get/list/watch on {resource}"
                + (", which are cluster-scoped: a ClusterRole, not a Role (see the pvleft-reader ClusterRole in the "
                   "README)" if kind is not None and not kind.namespaced
                   else " (see the pvleft-reader ClusterRole in the README)"))
        return f"{message}; {hint}"
    return f"{exc.api_message or exc.reason or 'the server refused the request'} ({exc.verb} {exc.path}: HTTP {exc.status})"
