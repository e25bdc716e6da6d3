"""A kubeconfig file checked against client-go's v1 types, as kubectl's decoding checks it: one error line naming the
file, the key and the type kubectl sees, never the value (it may be a token or a password). What passes is typed
from then on (``Config`` and its entries below), so the connection is resolved from a typed document."""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import TYPE_CHECKING

from kubectl_pvleft import text
from kubectl_pvleft.errors import ConfigError

if TYPE_CHECKING:  # types for mypy alone: a kubeconfig is read on every run, and a TypedDict class costs start-up
    from typing import Optional, TypedDict, TypeGuard, Union

    # How the schema below is written: a type (str, bool; bytes: base64 text; object: any JSON), [x] a list of x,
    # {str: x} a map to x, {"key": x, ...} a struct.
    Schema = Union[type, list["Schema"], dict[Union[str, type[str]], "Schema"]]

    # The document check_types lets through, as client-go's v1 types name it (tools/clientcmd/api/v1/types.go).
    # Every key may be absent or null (Go leaves the zero value), except that a null string in a list or in a map
    # of strings, and a null name of a cluster, user or context, has become "" (as kubectl reads them). Base64
    # fields are their text; an extension is any JSON. The same shape as _SCHEMA below, which is what makes it
    # true: a field added to the one is added to the other.
    class NamedExtension(TypedDict, total=False):
        name: Optional[str]
        extension: object

    Extensions = list[Optional[NamedExtension]]

    class Preferences(TypedDict, total=False):
        colors: Optional[bool]
        extensions: Optional[Extensions]

    Cluster = TypedDict("Cluster", {
        "server": Optional[str], "tls-server-name": Optional[str], "insecure-skip-tls-verify": Optional[bool],
        "certificate-authority": Optional[str], "certificate-authority-data": Optional[str],
        "proxy-url": Optional[str], "disable-compression": Optional[bool], "extensions": Optional[Extensions]},
        total=False)

    class AuthProviderConfig(TypedDict, total=False):
        name: Optional[str]
        config: Optional[dict[str, str]]

    class ExecEnvVar(TypedDict, total=False):
        name: Optional[str]
        value: Optional[str]

    ExecConfig = TypedDict("ExecConfig", {
        "command": Optional[str], "args": Optional[list[str]], "env": Optional[list[Optional[ExecEnvVar]]],
        "apiVersion": Optional[str], "installHint": Optional[str], "provideClusterInfo": Optional[bool],
        "interactiveMode": Optional[str],
        # Not client-go's: the folder of the file that defined the plugin, which the merge sets on every exec
        # mapping (over anything the file wrote there) and kubeconfig.py takes out into Auth.exec_dir.
        "__dir__": str}, total=False)
    AuthInfo = TypedDict("AuthInfo", {
        "client-certificate": Optional[str], "client-certificate-data": Optional[str], "client-key": Optional[str],
        "client-key-data": Optional[str], "token": Optional[str], "tokenFile": Optional[str], "as": Optional[str],
        "as-uid": Optional[str], "as-groups": Optional[list[str]],
        "as-user-extra": Optional[dict[str, Optional[list[str]]]], "username": Optional[str],
        "password": Optional[str], "auth-provider": Optional[AuthProviderConfig], "exec": Optional[ExecConfig],
        "extensions": Optional[Extensions]}, total=False)

    class Context(TypedDict, total=False):
        cluster: Optional[str]
        user: Optional[str]
        namespace: Optional[str]
        extensions: Optional[Extensions]

    class NamedCluster(TypedDict, total=False):
        name: str
        cluster: Optional[Cluster]

    class NamedAuthInfo(TypedDict, total=False):
        name: str
        user: Optional[AuthInfo]

    class NamedContext(TypedDict, total=False):
        name: str
        context: Optional[Context]

    Config = TypedDict("Config", {
        "kind": Optional[str], "apiVersion": Optional[str], "current-context": Optional[str],
        "extensions": Optional[Extensions], "preferences": Optional[Preferences],
        "clusters": Optional[list[Optional[NamedCluster]]], "users": Optional[list[Optional[NamedAuthInfo]]],
        "contexts": Optional[list[Optional[NamedContext]]]}, total=False)


# client-go's kubeconfig types (tools/clientcmd/api/v1): kubectl decodes every file into them and refuses the
# file when a value has another JSON type, in whichever entry it is. A dict is a struct, {str: x} a map, [x] a
# list; bytes is base64 text; object is anything. Null is always accepted (Go leaves the zero value).
_EXTENSIONS: list[Schema] = [{"name": str, "extension": object}]
_SCHEMA: dict[Union[str, type[str]], Schema] = {
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
_EXPECTED: dict[type, str] = {str: "a string", bool: "true or false", bytes: "a base64 string", list: "a list", dict: "a mapping"}


def _check_types(value: object, schema: Schema, where: str, path: Path) -> None:
    """Refuse the file where kubectl's decoding would, naming the key (an entry by its name when it has one)."""
    if value is None or schema is object:
        return
    if isinstance(schema, list):
        if not isinstance(value, list):
            raise _refused(value, list, where, path)
        for index, item in enumerate(value):
            _check_types(item, schema[0], f"{where}[{index}]", path)
            if item is None and schema[0] is str:
                value[index] = ""  # Go's zero value, as kubectl reads a null string in a list
    elif isinstance(schema, dict):
        if not isinstance(value, dict):
            raise _refused(value, dict, where, path)
        if str in schema:  # a map
            for key, item in value.items():
                _check_types(item, schema[str], _key_path(where, key), path)
                if item is None and schema[str] is str:
                    value[key] = ""
        else:
            section, _, rest = where.partition("[")
            body = _ENTRY_BODY.get(section) if rest[:-1].isdigit() else None  # a named entry: clusters[0]
            for key, item_schema in schema.items():
                if isinstance(key, str) and key in value:  # a struct's keys are its field names
                    named = key == body and isinstance(value.get("name"), str)  # as the messages below name it
                    child = f'{body} "{text.shown(value["name"])}"' if named else _key_path(where, key)
                    _check_types(value[key], item_schema, child, path)
            if body is not None and value.get("name") is None:  # a missing or null name is "" to kubectl, as in Go
                value["name"] = ""
    elif not isinstance(value, str if schema is bytes else schema) or (schema is not bool and isinstance(value, bool)):
        raise _refused(value, schema, where, path)
    elif schema is bytes and isinstance(value, str):
        try:  # Go's base64.StdEncoding, which skips line breaks
            base64.b64decode(value.replace("\r", "").replace("\n", ""), validate=True)
        except (binascii.Error, ValueError):
            raise ConfigError(f"kubeconfig {path}: {where} is not valid base64") from None


def _refused(value: object, kind: type, where: str, path: Path) -> ConfigError:
    return ConfigError(f"kubeconfig {path}: {where} must be {_EXPECTED[kind]}, not {_what(value)}")


_ENTRY_BODY = {"clusters": "cluster", "users": "user", "contexts": "context"}


def _key_path(where: str, key: str) -> str:
    key = text.shown(key)  # a map key is the file's text: escaped
    return f"{where}: {key}" if where.endswith('"') else f"{where}.{key}" if where else key


def _what(value: object) -> str:
    """The type kubectl sees, never the value (it may be a token or a password)."""
    if isinstance(value, bool):
        return "a boolean (kubectl reads an unquoted y, n, yes, no, on, off, true or false as one: quote it)"
    if isinstance(value, (int, float)):
        return "a number (kubectl reads an unquoted 12, 0o17, 0b101, 09 or 1e3 as one: quote it)"
    names: dict[type, str] = {str: "a string", list: "a list", dict: "a mapping"}
    return names.get(type(value), type(value).__name__)


def check_types(doc: dict[str, object], path: Path) -> TypeGuard[Config]:
    """True, the document being what client-go's v1 types hold (typed as Config from then on); else the
    ConfigError where kubectl's decoding into them would refuse the file."""
    _check_types(doc, _SCHEMA, "", path)
    return True
