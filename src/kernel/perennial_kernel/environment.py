"""A python machine's own environment, made by the interpreter the machine runs on: a virtual
environment that sees exactly the packages that interpreter sees (a virtual environment's own,
when the interpreter is one), into which the machine's packages go. Installing into it changes nothing of
the person's. Run as ``python -c ... make DIR``; prints the environment's interpreter. A kernel
that was started ahead enters the environment (``enter``), which imports nothing more.
"""

import os
import site
import sys

# A .pth file in the environment's site-packages, naming the interpreter's own package folders.
_PTH = "_perennial_interpreter.pth"


def _own_package_dirs():
    """Where this interpreter finds its packages: its site-packages (a virtual environment's, when
    it is one: a new environment made from it would see only its base's) and the user's."""
    dirs = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return [d for d in dirs if os.path.isdir(d)]


def _builder(system_site_packages):
    """venv's builder, without activation scripts, that writes the .pth file naming this
    interpreter's package folders."""
    import subprocess
    import venv

    class Builder(venv.EnvBuilder):
        def setup_scripts(self, context):
            """No activation scripts: nobody activates a machine's environment, its kernel runs in it."""

        def post_setup(self, context):
            purelib = subprocess.check_output(
                [context.env_exe, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                universal_newlines=True,
            )
            with open(os.path.join(purelib.strip(), _PTH), "w", encoding="utf-8") as pth:
                pth.write("".join(d + "\n" for d in _own_package_dirs()))
            self.python = context.env_exe

    return Builder(system_site_packages=system_site_packages, with_pip=False, symlinks=os.name != "nt")


def _sees_base_packages():
    """Whether this interpreter sees its base installation's packages: a virtual environment made
    without them is kept without them."""
    base = site.getsitepackages([sys.base_prefix]) if hasattr(site, "getsitepackages") else []
    return sys.prefix == sys.base_prefix or any(d in sys.path for d in base)


def enter(prefix, executable, site_packages):
    """Makes this interpreter, started ahead of the machine it now runs (the python engine keeps
    one ready per interpreter), what the machine's environment would have started: the
    environment's interpreter and prefix, and its site-packages, with what its .pth files add,
    ahead of the interpreter's own package folders. The environment is one this module made from
    this interpreter, so that everything else is already as that one would have it."""
    # Where the interpreter's site-packages begin: its user site-packages, if any, comes before
    # them in an environment too.
    own = set(site.getsitepackages()) if hasattr(site, "getsitepackages") else set()
    at = next((i for i, entry in enumerate(sys.path) if entry in own), len(sys.path))
    # site's prefixes, as it sets them in an environment: its own first, then the installation's
    # where it sees those packages (an environment's prefix, this interpreter's own, gives way).
    inherited = [p for p in site.PREFIXES if p != sys.prefix or sys.prefix == sys.base_prefix]
    site.PREFIXES = [prefix] + (inherited if _system_site_packages(prefix) else [])
    sys.executable = executable
    sys.prefix = sys.exec_prefix = prefix
    before = len(sys.path)
    site.addsitedir(site_packages)
    added = sys.path[before:]
    del sys.path[before:]
    sys.path[at:at] = added
    # sysconfig's paths were worked out from the interpreter's prefix, if anything asked already.
    import sysconfig

    if getattr(sysconfig, "_CONFIG_VARS", None) is not None:
        sysconfig._CONFIG_VARS = None
        if hasattr(sysconfig, "_CONFIG_VARS_INITIALIZED"):
            sysconfig._CONFIG_VARS_INITIALIZED = False


# pip's launchers in an environment's scripts folder: it is made without pip, which it takes from
# the interpreter's packages, and a shell's ``pip`` would otherwise be the first one on PATH.
_LAUNCHER = (
    ("pip.cmd", '@"%~dp0python.exe" -m pip %*\r\n')
    if os.name == "nt"
    else ("pip", '#!/bin/sh\nexec "$(dirname "$0")/python" -m pip "$@"\n')
)


def scripts_first():
    """Where this interpreter runs in an environment this module made (a machine's own), puts the
    environment's scripts folder first on PATH, as activating it would, with pip's launchers there:
    a cell's shell commands and subprocesses (``!pip``, ``!python``, console scripts) are then the
    machine's, and install into it. Anything else is left as it is: it may be the person's."""
    own = site.getsitepackages() if hasattr(site, "getsitepackages") else []
    made_here = any(os.path.isfile(os.path.join(d, _PTH)) for d in own if d.startswith(sys.prefix))
    scripts = os.path.join(sys.prefix, "Scripts" if os.name == "nt" else "bin")
    if not made_here or not os.path.isdir(scripts):
        return
    name, text = _LAUNCHER
    stem, suffix = os.path.splitext(name)
    major, minor = sys.version_info[:2]
    for launcher in {stem, f"{stem}{major}", f"{stem}{major}.{minor}"}:
        path = os.path.join(scripts, launcher + suffix)
        if not os.path.exists(path):
            with open(path, "w", encoding="utf-8", newline="") as file:
                file.write(text)
            os.chmod(path, 0o755)
    rest = [
        p
        for p in os.environ.get("PATH", "").split(os.pathsep)
        if p and os.path.normcase(p) != os.path.normcase(scripts)
    ]
    os.environ["PATH"] = os.pathsep.join([scripts, *rest])
    os.environ["VIRTUAL_ENV"] = sys.prefix


def _system_site_packages(prefix):
    """Whether the environment at ``prefix`` sees its installation's packages (its pyvenv.cfg)."""
    try:
        with open(os.path.join(prefix, "pyvenv.cfg"), encoding="utf-8") as config:
            for line in config:
                key, _, value = line.partition("=")
                if key.strip().lower() == "include-system-site-packages":
                    return value.strip().lower() == "true"
    except OSError:
        pass
    return False


def make(target):
    """Makes the environment at ``target``; answers its interpreter."""
    builder = _builder(_sees_base_packages())
    builder.create(target)
    return builder.python


if __name__ == "__main__":
    if sys.argv[1:2] == ["make"]:
        print(make(sys.argv[2]))
