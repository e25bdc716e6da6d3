"""A kubeconfig file checked against client-go's v1 types, as kubectl's decoding checks it: one error line naming the
file, the key and the type kubectl sees, never the value (it may be a token or a password)."""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Any

from kubectl_pvleft import text
from kubectl_pvleft.errors import ConfigError

# client-go's kubeconfig types (tools/clientcmd/api/v1): kubectl decodes every file into them and refuses the
# file when a value has another JSON type, in whichever entry it is. A dict is a struct, {str: x} a map, [x] a
# list; bytes is base64 text; object is anything. Null is always accepted (Go leaves the zero value).
_EXTENSIONS = [{"name": str, "extension": object}]
_SCHEMA: dict[Any, Any] = {
    "kind": str, "apiVersion": str, "current-context": str, "extensions": _EXTENSIONS,
    "preferences": {"colors": bool, "extensions": _EXTENSIONS},
    "clusters": [{"name": str, "cluster": {
        "server": str, "tls-server-name": str, "insecure-skip-tls-verify": bool, "certificate-authority": str,
        "certificate-authority-data": bytes, "proxy-url": str, "disable-compression": bool, "extensions": _EXTENSIONS}}],
    "users": [{"name": str, "user": {
        "client-certificate": str, "client-certificate-data": bytes, "client-key": str, "client-key-data": bytes,
        "token": str, "tokenFile": str, "as": str, "as-uid": str, "as-groups": [str], "as-user-extra": {str: [str]},
        "username": str, "password": str, "auth-provider": {"name": str, "config": {str: str}},
        "exec": {"command": str, "args": [str], "env": [{"name": str, "value": str}], "apiVersion": str,
                 "installHint": str, "provideClusterInfo": bool, "interactiveMode": str},
        "extensions": _EXTENSIONS}}],
    "contexts": [{"name": str, "context": {"cluster": str, "user": str, "namespace": str, "extensions": _EXTENSIONS}}],
}
_EXPECTED = {str: "a string", bool: "true or false", bytes: "a base64 string", list: "a list", dict: "a mapping"}


def _check_types(value: Any, schema: Any, where: str, path: Path) -> None:
    """Refuse the file where kubectl's decoding would, naming the key (an entry by its name when it has one)."""
    if value is None or schema is object:
        return
    kind = dict if isinstance(schema, dict) else list if isinstance(schema, list) else schema
    if not isinstance(value, str if kind is bytes else kind) or (kind is not bool and isinstance(value, bool)):
        raise ConfigError(f"kubeconfig {path}: {where} must be {_EXPECTED[kind]}, not {_what(value)}")
    node: Any = value  # checked against kind above; its parts are checked below
    if isinstance(schema, list):
        for index, item in enumerate(node):
            _check_types(item, schema[0], f"{where}[{index}]", path)
            if item is None and schema[0] is str:
                node[index] = ""  # Go's zero node, as kubectl reads a null string in a list
    elif isinstance(schema, dict) and str in schema:  # a map
        for key, item in node.items():
            _check_types(item, schema[str], _key_path(where, key), path)
            if item is None and schema[str] is str:
                node[key] = ""
    elif isinstance(schema, dict):
        body = _ENTRY_BODY.get(where.partition("[")[0]) if where.endswith("]") else None
        for key, item_schema in schema.items():
            if key in node:
                named = key == body and isinstance(node.get("name"), str)  # as the messages below name it
                child = f'{body} "{text.shown(node["name"])}"' if named else _key_path(where, key)
                _check_types(node[key], item_schema, child, path)
    if kind is bytes:
        try:  # Go's base64.StdEncoding, which skips line breaks
            base64.b64decode(node.replace("\r", "").replace("\n", ""), validate=True)
        except (binascii.Error, ValueError):
            raise ConfigError(f"kubeconfig {path}: {where} is not valid base64") from None


_ENTRY_BODY = {"clusters": "cluster", "users": "user", "contexts": "context"}


def _key_path(where: str, key: str) -> str:
    key = text.shown(key)  # a map key is the file's text: escaped
    return f"{where}: {key}" if where.endswith('"') else f"{where}.{key}" if where else key


def _what(value: Any) -> str:
    """The type kubectl sees, never the value (it may be a token or a password)."""
    if isinstance(value, bool):
        return "a boolean (kubectl reads an unquoted y, n, yes, no, on, off, true or false as one: quote it)"
    if isinstance(value, (int, float)):
        return "a number (kubectl reads an unquoted 12, 0o17, 0b101, 09 or 1e3 as one: quote it)"
    names: dict[type, str] = {str: "a string", list: "a list", dict: "a mapping"}
    return names.get(type(value), type(value).__name__)


def check_types(doc: Any, path: Path) -> None:
    """Refuse the file where kubectl's decoding into client-go's v1 types would refuse it."""
    _check_types(doc, _SCHEMA, "", path)
