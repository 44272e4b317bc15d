"""How the ``shell`` tool runs a command: a clean environment, and nothing left behind.

Theory of operation. A command the model wrote is untrusted, so:

* **Its environment is an allow-list** (:func:`command_environment`), the way
  OpenSSH passes only ``SendEnv``/``AcceptEnv`` names: ``PATH``, ``HOME``,
  ``LANG``, ``LC_*``, ``TERM``, ``TMPDIR``, ``USER``, ``LOGNAME``, ``SHELL``,
  ``TZ`` -- never a provider key, never a variable whose name says ``KEY``,
  ``TOKEN``, ``SECRET``, ``PASSWORD``, ``PASSWD`` or ``CREDENTIAL`` -- plus
  exactly the names the user passes (``pass_env``; a trailing ``*`` matches a
  prefix). A name the user passes is passed even when it looks secret: that is
  the user's explicit choice.
* **It runs under a supervisor** (:data:`SUPERVISOR`, a few lines of Python
  started as ``python -I -S``), in a session of its own. On Linux the
  supervisor makes itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``):
  every process the command starts and abandons -- a ``&`` background job, a
  ``setsid`` daemon, a double fork -- is reparented to it, not to init. When
  the shell exits, or when railings asks it to stop (``SIGTERM``, on a timeout
  or a cancellation), the supervisor kills the shell's process group and then
  every process reparented to it, until none is left, and exits with the
  shell's status (``128 + n`` for a shell killed by signal ``n``). Like
  ``systemd-run --scope`` or ``tini -s``, but without a daemon or privileges.
* **The keys railings holds itself** are in its own environment, which a
  command of the same user could read from ``/proc/PID/environ``.
  :func:`protect_process` (called by ``railings run`` and ``railings chat``)
  makes the railings process non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``, what
  ``ssh-agent`` does): its environment, memory and ``ptrace`` are then closed to
  other processes of the user. Not to root.
* **What cannot be caught is documented**: without ``PR_SET_CHILD_SUBREAPER``
  (macOS, the BSDs) only the shell's process group is killed, so a child that
  calls ``setsid`` escapes; a process that kills the supervisor itself (it is
  in the command's reach, as every process of the same user is) escapes too.
  This is not a container: docs/SECURITY.md says what to use for untrusted work.

The tool waits for the supervisor to exit, then for the output pipes only a
short grace (:data:`PIPE_GRACE`): a process that escaped and holds the pipes
open cannot keep the call running.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import signal
import sys
from collections.abc import Iterable, Mapping

__all__ = [
    "ALLOWED_VARIABLES",
    "PIPE_GRACE",
    "SECRET_WORDS",
    "STOP_GRACE",
    "SUPERVISOR",
    "command_environment",
    "exited",
    "protect_process",
    "stop",
    "supervised_argv",
]

ALLOWED_VARIABLES = (
    "PATH",
    "HOME",
    "LANG",
    "LC_*",
    "TERM",
    "TMPDIR",
    "USER",
    "LOGNAME",
    "SHELL",
    "TZ",
)
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
PIPE_GRACE = 1.0  # seconds to read output still in the pipes once the command has ended
STOP_GRACE = 5.0  # seconds the supervisor gets to kill what the command started


def _looks_secret(name: str) -> bool:
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) if p.endswith("*") else name == p for p in patterns)


def command_environment(
    pass_env: Iterable[str] = (), *, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment a command gets: the allow-list, then the names in ``pass_env``.

    ``environ`` defaults to ``os.environ``. Allow-listed names that say KEY,
    TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL are dropped (``LC_API_KEY``);
    names in ``pass_env`` are kept whatever they say. ``PATH`` is always set.
    """
    source = os.environ if environ is None else environ
    named = tuple(pass_env)
    env = {
        name: value
        for name, value in source.items()
        if (_matches(name, ALLOWED_VARIABLES) and not _looks_secret(name)) or _matches(name, named)
    }
    env.setdefault("PATH", DEFAULT_PATH)
    return env


# The supervisor: argv[1] is the command. Kept to the standard library's smallest part
# (it runs with -I -S: no site, no user paths, no PYTHON* variables).
SUPERVISOR = r"""
import os, signal, sys

class Stop(Exception):
    pass

def stop(signo, frame):
    raise Stop

def children():
    me, found = os.getpid(), []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name, "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == me:
                found.append(int(name))
    return found

def kill_group(shell):
    if shell:
        try:
            os.killpg(shell, signal.SIGKILL)
        except OSError:
            pass

def sweep(shell):
    killed = 0
    kill_group(shell)
    while True:
        for pid in children():
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return killed

subreaper = False
try:
    import ctypes
    subreaper = ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0
except (AttributeError, OSError, ImportError):
    pass
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGHUP, stop)
signal.signal(signal.SIGINT, stop)
shell = status = None
try:
    shell = os.fork()
    if shell == 0:
        os.setpgid(0, 0)
        for signo in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(signo, signal.SIG_DFL)
        try:
            os.execv("/bin/sh", ["/bin/sh", "-c", sys.argv[1]])
        finally:
            os._exit(127)  # no shell to run: the child never runs the supervisor's code
    while status is None:
        pid, raw = os.waitpid(-1, 0)
        if pid == shell:
            status = raw
except Stop:
    pass
for signo in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(signo, signal.SIG_IGN)
left = sweep(shell) if subreaper else kill_group(shell) or 0
if left and status is not None:
    sys.stderr.write("[railings: killed %d process(es) the command left running]\n" % left)
    sys.stderr.flush()
if status is None:
    os._exit(128 + signal.SIGTERM)
os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
"""


_PR_SET_DUMPABLE = 4


def protect_process() -> bool:
    """Make this process non-dumpable (Linux): True when done, False where unsupported.

    Another process of the same user can then no longer read this one's
    environment or memory through ``/proc`` or attach to it; it also disables
    core dumps of this process. The flag is not inherited across ``exec``.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return bool(ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)
    except (AttributeError, OSError):
        return False


def supervised_argv(command: str) -> list[str]:
    """The argv that runs ``command`` under :data:`SUPERVISOR`."""
    return [sys.executable, "-I", "-S", "-c", SUPERVISOR, command]


async def exited(process: asyncio.subprocess.Process) -> int:
    """Wait for ``process`` to exit, not for its pipes to close (``Process.wait`` waits
    for both, and a child that keeps a pipe open would keep it waiting)."""
    delay = 0.002
    while process.returncode is None:
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)
    return process.returncode


async def stop(process: asyncio.subprocess.Process) -> None:
    """Ask the supervisor to kill everything and exit; kill its group if it does not.

    Never signals a pid below 2: ``kill(-1)`` would reach every process of the user.
    """
    if process.returncode is not None or process.pid < 2:
        return
    try:
        os.kill(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        async with asyncio.timeout(STOP_GRACE):
            await exited(process)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        await exited(process)
