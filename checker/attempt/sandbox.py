"""Where a graded attempt's worker may look and write: the sandbox `checker grade` puts it in.

A learner running their own attempt needs no sandbox: it is their code, on their machine. A grade is another
matter: the attempt runs on the grader's machine, beside the hidden checks, the references and the other
learners' files. `checker grade` (and so the Gradescope autograder) plans a `Sandbox` before any attempt runs
and hands it to each checks process, which starts the attempt's worker inside it:

- "namespace": bubblewrap (Debian's `bubblewrap` package) starts the worker in its own mount, PID, IPC and
  network namespaces. The file system is read-only, a private /tmp aside; the hidden paths (the snapshot, every
  other learner's copy, the repository's `solutions/`, `hidden/` folders and `.git`, the graded folder and the
  output folder) are empty folders; the attempt's own copy is the one place it may write. When the grader is
  root, `setpriv` (util-linux) also makes the worker an unprivileged user of its own, without capabilities.
- "user": the grader is root and bubblewrap cannot make namespaces here (a container without the right to):
  the worker is forked as usual and becomes an unprivileged user of its own (one uid per learner) before it
  imports anything of the attempt. File modes keep it out: the snapshot folder is root's alone, each learner's
  copy its own uid's alone, and the repository's hidden paths must not be readable by other users (the
  Gradescope bundle's setup.sh makes it so); `Sandbox.exposed` names any that are.
- "none": neither is possible (a mentor's laptop, not root, no bubblewrap): attempts run as the grader's user
  and can read and write whatever it can. `checker grade` says so in its output and in the gradebook.

This module is the attempt side's: the checks process imports it to start the worker; it imports nothing of
the checks.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from checker.core.manifest import REPO_ROOT

ENV_VAR = "FX_KATAS_SANDBOX"  # the plan, as JSON, in the checks process's environment
FIRST_UID = 61000  # attempts run as FIRST_UID + learner index (FX_KATAS_SANDBOX_UID moves the range)
UID_SPAN = 10000
ATTEMPT_USER = "fxkatas"  # $USER inside the sandbox: getpass.getuser() must not fail for a uid without a name

CONTAINER_RECIPE = (
    "to isolate attempts, grade as root where bubblewrap is installed (Debian/Ubuntu: apt-get install "
    "bubblewrap), for example in a container: docker run --rm -v \"$PWD\":/course -w /course "
    "python:3.11 sh -c 'apt-get update && apt-get install -y bubblewrap make && make grade DIR=submissions'")


@dataclass(frozen=True)
class Sandbox:
    """The plan for one attempt's worker. `hide`: folders (or files) the attempt must not see; `reveal`: files
    under them it must read all the same (the probes a check runs in the attempt's process: they hold no
    verdict); `own`: the folder it may write (its working copy); `uid`: the unprivileged user it runs as, or
    None to stay the grader's user; `exposed`: hidden paths the plan could not keep from it (mode "user":
    readable by all); `exchange`: the folder where the checks make what they hand the attempt to write into
    (kata 8's saved programs): the checks process's temporary folder, and the attempt's too."""

    mode: str  # "namespace", "user" or "none"
    hide: tuple[str, ...] = ()
    own: str = ""
    uid: int | None = None
    exposed: tuple[str, ...] = field(default=())
    reveal: tuple[str, ...] = field(default=())  # hidden files the attempt's process must load (probes)
    exchange: str = ""  # a folder the checks and the attempt both reach: the checks process's TMPDIR

    def for_learner(self, own: Path, index: int, exchange: Path | None = None) -> "Sandbox":
        """The same plan for one learner: their own copy and exchange folder, and (as root) a uid of their own."""
        uid = None if self.uid is None else self.uid + index % UID_SPAN
        return Sandbox(self.mode, self.hide, str(own), uid, self.exposed, self.reveal,
                       str(exchange) if exchange else "")

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def from_env(environ: dict[str, str] | None = None) -> "Sandbox | None":
        raw = (os.environ if environ is None else environ).get(ENV_VAR)
        if not raw:
            return None
        data = json.loads(raw)
        return Sandbox(data["mode"], tuple(data["hide"]), data["own"], data["uid"], tuple(data["exposed"]),
                       tuple(data["reveal"]), data.get("exchange", ""))

    @property
    def isolated(self) -> bool:
        return self.mode != "none" and not self.exposed

    def describe(self) -> str:
        """One line for the grader's output and the gradebook."""
        if self.mode == "namespace":
            who = f", each as an unprivileged user of its own (uid {self.uid}+)" if self.uid is not None else ""
            return f"isolated: every attempt ran in a bubblewrap sandbox{who}; it could read no hidden file " \
                   f"and write only its own copy"
        if self.mode == "user":
            text = f"isolated by user: every attempt ran as an unprivileged user of its own (uid {self.uid}+)"
            if self.exposed:
                text += "; NOT hidden from attempts (readable by every user): " + ", ".join(self.exposed)
            return text
        why = f" {self.exposed[0]}" if self.exposed else ""
        return "NOT isolated: attempts ran as the grader's user and could read the hidden checks and references " \
               f"and write other learners' files{why}; " + CONTAINER_RECIPE

    # -- starting the worker

    def worker_command(self, python_argv: list[str], cwd: Path) -> list[str]:
        """The command that runs `python_argv` (the worker) inside this sandbox (mode "namespace")."""
        command = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--perms", "1777", "--tmpfs", "/tmp",
                   "--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts", "--die-with-parent",
                   "--new-session"]
        if os.geteuid() != 0:
            command.append("--unshare-user")
        emptied = [Path("/tmp")]  # folders replaced by an empty one: a path bound back under them needs its
        # folders made anew, and bubblewrap's own are root's alone
        if self.uid is not None:  # folders others cannot enter (a pyenv under /root): only what is needed
            for closed, _ in unreachable_for_others(needed_paths()):
                command += ["--tmpfs", str(closed)]
                emptied.append(closed)
        for path in needed_paths():  # the interpreter, its packages and the checker, bound back read-only
            if any(e == path or e in path.parents for e in emptied):
                command += [*_folders_to(path, emptied), "--ro-bind", str(path), str(path)]
        for path in self.hide:
            if Path(path).is_dir():
                command += [*_folders_to(Path(path), emptied), "--tmpfs", path]
                emptied.append(Path(path))
            elif Path(path).exists():
                command += ["--ro-bind", "/dev/null", path]
        for path in self.reveal:
            command += [*_folders_to(Path(path), emptied), "--ro-bind", path, path]
        for folder in filter(None, (self.own, self.exchange)):
            command += [*_folders_to(Path(folder), emptied), "--bind", folder, folder]
        command += ["--chdir", str(cwd), "--setenv", "TMPDIR", "/tmp", "--setenv", "HOME", "/tmp",
                    "--setenv", "USER", ATTEMPT_USER, "--setenv", "LOGNAME", ATTEMPT_USER, "--"]
        if self.uid is not None:
            command += ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups",
                        "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
        return command + python_argv

    def become_attempt_user(self) -> None:
        """In a forked worker (mode "user"), before anything of the attempt runs: become the learner's
        unprivileged user, for good (the real, effective and saved ids all change, so no way back)."""
        if self.uid is None:
            return
        os.setgroups([])
        os.setresgid(self.uid, self.uid, self.uid)
        os.setresuid(self.uid, self.uid, self.uid)
        for key, value in (("USER", ATTEMPT_USER), ("LOGNAME", ATTEMPT_USER), ("HOME", self.own or "/tmp"),
                           ("TMPDIR", self.exchange or self.own or "/tmp")):
            os.environ[key] = value


def _folders_to(path: Path, emptied: list[Path]) -> list[str]:
    """bubblewrap arguments that make the folders between an emptied folder and `path` passable by anyone."""
    inside = [e for e in emptied if e == path or e in path.parents]
    if not inside:
        return []
    top = max(inside, key=lambda e: len(e.parts))
    between = [p for p in list(path.parents)[::-1] if top in p.parents]
    return [a for folder in between for a in ("--perms", "0711", "--dir", str(folder))]


# -- planning (the grader's side) ----------------------------------------------------------------------

def needed_paths() -> list[Path]:
    """What the worker must read: the interpreter and its standard library, the virtual environment's
    packages, and the repository (for `checker` and `katas.common`)."""
    paths = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), Path(sys.executable).resolve().parent,
             REPO_ROOT.resolve()}
    return sorted(paths)


def unreachable_for_others(paths: list[Path]) -> list[tuple[Path, list[Path]]]:
    """For paths behind a folder other users cannot enter (a pyenv under /root): that folder, and the paths
    under it. A sandbox puts an empty folder there and binds just those paths back, read-only."""
    closed: dict[Path, list[Path]] = {}
    for path in paths:
        for folder in [*list(path.parents)[::-1][1:], path]:
            try:
                if not folder.stat().st_mode & stat.S_IXOTH:
                    closed.setdefault(folder, []).append(path)
                    break
            except OSError:
                break
    outer = {c: n for c, n in closed.items() if not any(o in c.parents for o in closed)}
    for c, n in closed.items():
        for o in outer:
            if o in c.parents:
                outer[o] += n
    return sorted((c, sorted(set(n))) for c, n in outer.items())


def bubblewrap_works() -> bool:
    """Can bubblewrap make the namespaces here? (It is missing, or a container forbids them.)"""
    if shutil.which("bwrap") is None:
        return False
    command = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
               "--unshare-net", "--die-with-parent"]
    if os.geteuid() != 0:
        command.append("--unshare-user")
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return False
    try:
        return subprocess.run([*command, "--", "true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def readable_by_others(path: Path) -> bool:
    """Could a user other than the owner read `path` (or a file under it)? Every folder on the way must let
    others through, and the path itself (or something in it) be readable by others."""
    try:
        for parent in list(path.resolve().parents)[::-1]:
            if not parent.stat().st_mode & stat.S_IXOTH:
                return False
        mode = path.stat().st_mode
        if not stat.S_ISDIR(mode):
            return bool(mode & stat.S_IROTH)
        if not mode & stat.S_IXOTH:
            return False
        return bool(mode & stat.S_IROTH) or any(readable_by_others(child) for child in path.iterdir())
    except OSError:
        return False


def first_uid() -> int:
    """The uid of the first learner's attempts: FX_KATAS_SANDBOX_UID, else the `fxkatas` user's (the Gradescope
    bundle's setup.sh creates it; one learner per container there), else FIRST_UID."""
    import pwd

    try:
        return int(os.environ["FX_KATAS_SANDBOX_UID"])
    except (KeyError, ValueError):
        pass
    try:
        return pwd.getpwnam(ATTEMPT_USER).pw_uid
    except KeyError:
        return FIRST_UID


def plan(hide: list[Path], *, want: str = "auto", reveal: list[Path] = ()) -> Sandbox:
    """The strongest sandbox this machine allows (`want`: "auto", or force "namespace", "user", "none")."""
    needed = [Path(sys.prefix).resolve(), Path(sys.executable).resolve(), REPO_ROOT.resolve()]
    hide_text = tuple(sorted({str(p.resolve()) for p in hide if p.exists()
                              and not any(n == p.resolve() or p.resolve() in n.parents for n in needed)}))
    root = os.geteuid() == 0
    uid = first_uid() if root else None
    if want in ("auto", "namespace") and bubblewrap_works():
        return Sandbox("namespace", hide_text, uid=uid, reveal=tuple(str(p) for p in reveal))
    if want == "namespace":
        raise RuntimeError("bubblewrap cannot make namespaces here (is the bubblewrap package installed?)")
    if root and want in ("auto", "user"):
        closed = unreachable_for_others(needed_paths())
        if closed:
            if want == "user":
                raise RuntimeError(f"an unprivileged user cannot reach {closed[0][1][0]} (behind {closed[0][0]})")
            return Sandbox("none", hide_text, exposed=(f"(an unprivileged user cannot run the Python under "
                                                        f"{closed[0][0]}, and bubblewrap is missing)",))
        exposed = tuple(p for p in hide_text if readable_by_others(Path(p)))
        return Sandbox("user", hide_text, uid=uid, exposed=exposed, reveal=tuple(str(p) for p in reveal))
    if want == "user":
        raise RuntimeError("switching attempts to an unprivileged user needs root")
    return Sandbox("none", hide_text)


def hand_over(folder: Path, uid: int | None) -> None:
    """Make `folder` (a learner's working copy) its attempt user's: owner `uid`, group root (the checks process
    reads the attempt's file; as root it may have given up the capability to ignore file modes), nothing for
    other users, so no other learner's attempt can read or change it."""
    if uid is None:
        return
    for path in [folder, *folder.rglob("*")]:
        os.lchown(path, uid, 0)
        if not path.is_symlink():
            path.chmod(0o750 if path.is_dir() else 0o640)


def lock_snapshot(snapshot: Path, reveal: list[Path]) -> None:
    """File modes for mode "user" (and a second wall in "namespace"): nobody but root may list or read the
    snapshot of hidden checks and references, except the `reveal` files, which any user may read by name."""
    for path in [snapshot, *snapshot.rglob("*")]:
        if path.is_symlink():
            continue
        path.chmod(0o711 if path.is_dir() else 0o600)
    for path in reveal:
        path.chmod(0o644)
    for folder in snapshot.glob("solutions"):
        folder.chmod(0o700)


def confine(command: list[str], cwd: Path) -> list[str]:
    """`command` as a process the checks start on the attempt's behalf must run while grading: inside the same
    sandbox as the attempt's worker (FX_KATAS_SANDBOX), when it reads what the attempt wrote. Kata 8 loads the
    attempt's saved program in a fresh process, and `torch.export.load` unpickles: run as the grader, that file
    could run code as the grader. Outside a grade (no sandbox planned), the command as it is."""
    sandbox = Sandbox.from_env()
    if sandbox is None or sandbox.mode == "none":
        return list(command)
    if sandbox.mode == "namespace":
        return sandbox.worker_command(list(command), cwd)
    if sandbox.uid is None:
        return list(command)
    return ["setpriv", f"--reuid={sandbox.uid}", f"--regid={sandbox.uid}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs", *command]


def confine_interpreters() -> None:
    """While grading, every Python interpreter the checks process starts runs in the attempt's sandbox (`confine`):
    such a process works on what the attempt made (kata 8's replay loads, and so unpickles, the attempt's saved
    program), so it gets no more than the attempt has. Called by the checks process when a sandbox is planned."""
    import subprocess

    original = subprocess.Popen.__init__

    def start_confined(self, args, *rest, **kwargs):
        if isinstance(args, (list, tuple)) and args and str(args[0]) == sys.executable:
            args = confine([str(a) for a in args], Path(kwargs.get("cwd") or os.getcwd()))
        original(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = start_confined
