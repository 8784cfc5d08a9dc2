"""How a sandbox machine takes this kernel. Run from this file by its path (pyodide-loader.ts),
before the package is imported: a fresh machine imports the kernel, and a restored machine of an
earlier build swaps the kernel its memory holds for this one, which takes that one's state over.
"""

import importlib
import sys


def start(kernel_dir, output_limit):
    """A fresh machine: the kernel imported from ``kernel_dir`` (which stays off ``sys.path``), and started."""
    sys.path.insert(0, kernel_dir)
    try:
        import perennial_kernel.pyodide_driver
    finally:
        sys.path.remove(kernel_dir)
    perennial_kernel.pyodide_driver.start_emscripten(output_limit)


def upgrade(kernel_dir):
    """Imports this kernel beside the one in memory and has it adopt that one's state; on failure the
    old one stays, as it was."""
    old = {name: sys.modules.pop(name) for name in list(sys.modules) if _ours(name)}
    importlib.invalidate_caches()
    sys.path.insert(0, kernel_dir)
    try:
        import perennial_kernel.pyodide_driver

        perennial_kernel.pyodide_driver.adopt_emscripten(old["perennial_kernel"])
    except BaseException:
        for name in [name for name in sys.modules if _ours(name)]:
            del sys.modules[name]
        sys.modules.update(old)
        raise
    finally:
        sys.path.remove(kernel_dir)


def _ours(name):
    return name == "perennial_kernel" or name.startswith("perennial_kernel.")
