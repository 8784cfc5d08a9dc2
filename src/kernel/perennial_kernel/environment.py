"""A python machine's own environment, made by the interpreter the machine runs on: a virtual
environment that sees exactly the packages that interpreter sees (a virtual environment's own,
when the interpreter is one), into which the machine's packages go. Installing into it changes nothing of
the person's. Run as ``python -c ... make DIR``; prints the environment's interpreter.
"""

import os
import site
import subprocess
import sys
import venv

# A .pth file in the environment's site-packages, naming the interpreter's own package folders.
_PTH = "_perennial_interpreter.pth"


def _own_package_dirs():
    """Where this interpreter finds its packages: its site-packages (a virtual environment's, when
    it is one: a new environment made from it would see only its base's) and the user's."""
    dirs = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return [d for d in dirs if os.path.isdir(d)]


class _Builder(venv.EnvBuilder):
    def setup_scripts(self, context):
        """No activation scripts: nobody activates a machine's environment, its kernel runs in it."""

    def post_setup(self, context):
        purelib = subprocess.check_output([context.env_exe, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], universal_newlines=True)
        with open(os.path.join(purelib.strip(), _PTH), "w", encoding="utf-8") as pth:
            pth.write("".join(d + "\n" for d in _own_package_dirs()))
        self.python = context.env_exe


def _sees_base_packages():
    """Whether this interpreter sees its base installation's packages: a virtual environment made
    without them is kept without them."""
    base = site.getsitepackages([sys.base_prefix]) if hasattr(site, "getsitepackages") else []
    return sys.prefix == sys.base_prefix or any(d in sys.path for d in base)


def make(target):
    """Makes the environment at ``target``; answers its interpreter."""
    builder = _Builder(system_site_packages=_sees_base_packages(), with_pip=False, symlinks=os.name != "nt")
    builder.create(target)
    return builder.python


if __name__ == "__main__":
    if sys.argv[1:2] == ["make"]:
        print(make(sys.argv[2]))
