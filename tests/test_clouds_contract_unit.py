"""The clouds' registry (``kubectl_pvleft.clouds.CLOUDS``) and the contract each cloud meets (``clouds/base.py``).

mypy checks every ``CLOUD`` against ``base.Cloud``, and each module its accessors return against its Protocol
(``make lint``: a cloud missing a method fails there). What mypy cannot see is checked here: each cloud is
listed once, and its declaration and modules import their SDK only inside a function (``open``), so that a run
without the cloud's flag, and ``--help``, never load it.
"""

from __future__ import annotations

import ast
import inspect

from kubectl_pvleft.clouds import CLOUDS, SOURCES

SDKS = ("google", "googleapiclient", "boto3", "botocore", "azure", "msal")


def _top_level_imports(module) -> set[str]:
    tree = ast.parse(inspect.getsource(module))
    found = set()
    for node in tree.body:  # the module's own body: an import inside a function is the lazy kind
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_each_cloud_is_listed_once_by_its_source():
    assert len(set(SOURCES)) == len(CLOUDS) == len({cloud.NAME for cloud in CLOUDS})
    assert all(cloud.FLAGS and cloud.FLAGS[0].name.startswith("--") for cloud in CLOUDS)  # the first asks for it


def test_a_clouds_declaration_and_modules_import_no_sdk_at_module_level():
    import sys

    loaded = []
    for cloud in CLOUDS:
        modules = [sys.modules[type(cloud).__module__], cloud.census()]
        modules += [accessor() for accessor in (cloud.prices, cloud.snapshots) if accessor is not None]
        for module in modules:
            loaded += [f"{module.__name__}: {name}" for name in _top_level_imports(module)
                       if name.split(".")[0] in SDKS]
    assert loaded == []
