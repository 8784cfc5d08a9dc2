"""A pytest plugin that points ipykernel's message-spec suite at the kernelspec PERENNIAL_KERNEL_NAME
(the suite starts the default kernel, python3)."""

import os

from jupyter_client import manager

_start_new_kernel = manager.start_new_kernel


def start_new_kernel(**kwargs):
    kwargs.setdefault("kernel_name", os.environ["PERENNIAL_KERNEL_NAME"])
    return _start_new_kernel(**kwargs)


manager.start_new_kernel = start_new_kernel
