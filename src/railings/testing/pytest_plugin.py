"""pytest fixtures for the test kit: ``scripted_server`` and ``fault_proxy``.

Enable with ``pytest_plugins = ["railings.testing.pytest_plugin"]`` in a
top-level ``conftest.py`` (or ``-p railings.testing.pytest_plugin``). Each test
gets its own server and proxy on free loopback ports, so tests run in parallel.

The script and the fault are fixtures too: override ``railings_script`` /
``railings_fault`` in a conftest, or parametrize them indirectly::

    @pytest.mark.parametrize("railings_fault", ["drop_terminator", "idle:seconds=2"],
                             indirect=True)
    def test_my_client_notices(fault_proxy):
        client = MyClient(base_url=fault_proxy.url + "/v1")
        ...

``railings_script`` accepts a :class:`~railings.testing.Script`, a dict in the
script format, or a path to a JSON file; by default it is the bundled demo
(:meth:`Script.demo`). ``railings_fault`` accepts a spec string or a
:class:`~railings.testing.Fault`; by default nothing is injected unless a
request carries ``x-railings-fault``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from railings._extras import require

require("railings.testing.pytest_plugin", "pytest")

import pytest  # noqa: E402  (after the extra check)

from railings.testing.faults import Fault  # noqa: E402
from railings.testing.proxy import FaultProxy  # noqa: E402
from railings.testing.script import Script  # noqa: E402
from railings.testing.server import ScriptedServer  # noqa: E402

__all__ = ["fault_proxy", "railings_fault", "railings_script", "scripted_server"]


@pytest.fixture
def railings_script(request: pytest.FixtureRequest) -> Script:
    """The script ``scripted_server`` runs (default: the bundled demo)."""
    param = getattr(request, "param", None)
    if param is None:
        return Script.demo()
    if isinstance(param, Script):
        return param
    if isinstance(param, str | Path):
        return Script.load(param)
    return Script.from_dict(param)


@pytest.fixture
def railings_fault(request: pytest.FixtureRequest) -> Fault:
    """The fault ``fault_proxy`` applies to every request (default: none)."""
    return Fault.parse(getattr(request, "param", None))


@pytest.fixture
def scripted_server(railings_script: Script) -> Iterator[ScriptedServer]:
    """A running :class:`ScriptedServer` on 127.0.0.1 and a free port."""
    with ScriptedServer(railings_script) as server:
        yield server


@pytest.fixture
def fault_proxy(scripted_server: ScriptedServer, railings_fault: Fault) -> Iterator[FaultProxy]:
    """A running :class:`FaultProxy` in front of ``scripted_server``."""
    with FaultProxy(scripted_server.url, railings_fault) as proxy:
        yield proxy
