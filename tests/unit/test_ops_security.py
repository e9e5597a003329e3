"""Security basics: no shell strings anywhere in the package; servers bind loopback by default."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import selene_dag
from selene_dag import cli

PACKAGE = Path(selene_dag.__file__).resolve().parent
FORBIDDEN = re.compile(r"shell\s*=\s*True|os\.system\s*\(|os\.popen\s*\(|commands\.getoutput")


def test_no_shell_execution_in_the_package() -> None:
    sources = sorted(PACKAGE.rglob("*.py"))
    assert len(sources) > 20
    offenders = [
        f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
        for path in sources
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if FORBIDDEN.search(line)
    ]
    assert offenders == []


def _commands_with_host() -> dict[str, str]:
    found = {}
    for command in cli.app.registered_commands:
        name = command.name or command.callback.__name__.replace("_", "-")
        params = inspect.signature(command.callback).parameters
        if "host" in params:
            found[name] = params["host"].default
    return found


def test_network_commands_bind_loopback_by_default() -> None:
    hosts = _commands_with_host()
    assert "dev" in hosts
    assert {name: host for name, host in hosts.items() if host != "127.0.0.1"} == {}
