"""A pytest plugin that points ipykernel's message-spec suite at the kernelspec PERENNIAL_KERNEL_NAME
(the suite starts the default kernel, python3)."""

import os

from ipykernel.tests import test_message_spec
from jupyter_client import manager

_start_new_kernel = manager.start_new_kernel


def start_new_kernel(**kwargs):
    """The kernel, its shell channel past the replies to the kernel_info requests jupyter_client
    sent again while it waited (the suite takes the next shell message for its own reply): one
    more is asked, and everything before its reply dropped."""
    kwargs.setdefault("kernel_name", os.environ["PERENNIAL_KERNEL_NAME"])
    km, kc = _start_new_kernel(**kwargs)
    msg_id = kc.kernel_info()
    while kc.get_shell_msg(timeout=60)["parent_header"].get("msg_id") != msg_id:
        pass
    return km, kc


manager.start_new_kernel = start_new_kernel

# The suite's reference for kernel_info_reply wants IPython's own version (2.1 or later) as every
# kernel's implementation_version; Perennial's kernel reports Perennial's. The rest of the reply is
# checked as the reference has it.
test_message_spec.KernelInfoReply.implementation_version.min = None
