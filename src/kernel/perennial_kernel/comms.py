"""Jupyter comms, which ipywidgets and other interactive libraries talk to their front end over.

A comm's messages to the front end are displays of their own kind (``{"comm": ...}`` entries of
the cell's displays, sent as they come); the front end's messages come back as the ``comm``
kernel command, which runs the comm's handlers outside any cell and answers what they printed
and displayed. Libraries find the manager and the comm class where they look for them:
``get_ipython().kernel.comm_manager`` (ipywidgets 6 and 7), the ``comm`` package's
``create_comm`` and ``get_comm_manager`` (ipywidgets 8), and ``ipykernel.comm`` (ipywidgets 6
and 7 import ``Comm`` from there), which is served from here wherever it is imported.
"""

import base64
import importlib.abc
import importlib.util
import sys
import types
import uuid

from .import_hooks import put_first, spec_elsewhere


class Comm:
    """One comm: its id, its target, and the handlers of the front end's messages. Made here (the
    kernel opens it: ``primary``) or by the manager for one the front end opened."""

    def __init__(
        self,
        target_name="",
        data=None,
        metadata=None,
        buffers=None,
        comm_id=None,
        primary=True,
        target_module=None,
        topic=None,
        _open_data=None,
        _close_data=None,
        **kwargs,
    ):
        self.comm_id = comm_id or uuid.uuid4().hex
        self.target_name = target_name
        self.target_module = target_module
        self.primary = primary
        self.topic = topic
        self._open_data = _open_data or {}
        self._close_data = _close_data or {}
        self._msg_callback = None
        self._close_callback = None
        self._closed = True
        manager = comm_manager()
        # Libraries test ``comm.kernel`` before they send: there is always one here.
        self.kernel = manager.kernel
        if primary:
            self.open(data=data, metadata=metadata, buffers=buffers)
        else:
            self._closed = False

    def open(self, data=None, metadata=None, buffers=None):
        manager = comm_manager()
        manager.register_comm(self)
        content = {"comm_id": self.comm_id, "target_name": self.target_name, "data": data or self._open_data}
        if self.target_module is not None:
            content["target_module"] = self.target_module
        self._publish("comm_open", content, metadata, buffers)
        self._closed = False

    def send(self, data=None, metadata=None, buffers=None):
        if not self._closed:
            self._publish("comm_msg", {"comm_id": self.comm_id, "data": data or {}}, metadata, buffers)

    def close(self, data=None, metadata=None, buffers=None, deleting=False):
        if self._closed:
            return
        self._closed = True
        if not deleting:
            self._publish("comm_close", {"comm_id": self.comm_id, "data": data or self._close_data}, metadata, buffers)
        comm_manager().unregister_comm(self)

    def on_msg(self, callback):
        self._msg_callback = callback
        # A widget sets its handler so: an Output widget is watched for ``with out:`` from then on.
        comm_manager().kernel.output_widgets.track(callback)

    def on_close(self, callback):
        self._close_callback = callback

    def handle_msg(self, msg):
        if self._msg_callback is not None:
            self._msg_callback(msg)

    def handle_close(self, msg):
        if self._close_callback is not None:
            self._close_callback(msg)

    def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        """The ``comm`` package's way for a subclass to send: the message as it is."""
        self._publish(msg_type, {"comm_id": self.comm_id, "data": data or {}, **keys}, metadata, buffers)

    def _publish(self, msg_type, content, metadata, buffers):
        comm_manager().kernel.displays.comm(msg_type, content, metadata or {}, [_base64(b) for b in buffers or []])


def _base64(buffer):
    return base64.b64encode(bytes(buffer)).decode("ascii")


class CommManager:
    """The kernel's comms and the targets a front end may open one for, as ipykernel's
    ``CommManager`` offers them to libraries."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.comms = {}
        self.targets = {}

    def register_target(self, target_name, f):
        if isinstance(f, str):
            module, _, name = f.rpartition(".")
            f = getattr(sys.modules[module], name)
        self.targets[target_name] = f

    def unregister_target(self, target_name, f=None):
        return self.targets.pop(target_name, None)

    def register_comm(self, comm):
        self.comms[comm.comm_id] = comm
        return comm.comm_id

    def unregister_comm(self, comm):
        self.comms.pop(comm.comm_id, None)

    def get_comm(self, comm_id):
        return self.comms.get(comm_id)

    def receive(self, message):
        """A front end's message: ``comm_open`` (made for its target, which takes it, or closed
        at once when there is no such target), ``comm_msg`` and ``comm_close`` (to its comm)."""
        kind = message["msg_type"]
        content = message.get("content") or {}
        msg = {
            "header": {"msg_type": kind},
            "content": content,
            "metadata": message.get("metadata") or {},
            "buffers": [memoryview(base64.b64decode(b)) for b in message.get("buffers") or []],
        }
        comm_id = content.get("comm_id")
        if kind == "comm_open":
            comm = Comm(comm_id=comm_id, primary=False, target_name=content.get("target_name", ""))
            self.register_comm(comm)
            target = self.targets.get(comm.target_name)
            if target is None:
                comm.close()
                return
            try:
                target(comm, msg)
            except Exception:
                comm.close()
                raise
        elif kind == "comm_msg":
            comm = self.get_comm(comm_id)
            if comm is not None:
                comm.handle_msg(msg)
        elif kind == "comm_close":
            comm = self.get_comm(comm_id)
            if comm is not None:
                self.unregister_comm(comm)
                comm._closed = True
                comm.handle_close(msg)

    def info(self, target_name=None):
        """The open comms, by id, with their targets (``comm_info_reply``)."""
        return {
            comm_id: {"target_name": comm.target_name}
            for comm_id, comm in self.comms.items()
            if target_name is None or comm.target_name == target_name
        }


_manager = None


def comm_manager():
    return _manager


def install(kernel):
    """Makes ``kernel``'s manager the one libraries find, wherever they look for it."""
    global _manager
    _manager = kernel.comm_manager
    put_first(_CommModules())
    _patch_comm_package(sys.modules.get("comm"))


def _patch_comm_package(module):
    if module is not None:
        module.create_comm = lambda *args, **kwargs: Comm(*args, **kwargs)
        module.get_comm_manager = comm_manager


class _CommModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``ipykernel.comm`` served from here (ipykernel's needs its own kernel, which a machine has
    not); the ``comm`` package patched as it is imported; and IPython's shell made before
    ``ipywidgets`` is imported, which registers its comm targets only where it finds one."""

    def find_spec(self, fullname, path, target=None):
        if fullname == "ipykernel.comm":
            return importlib.util.spec_from_loader(fullname, self)
        if fullname not in ("comm", "ipywidgets"):
            return None
        spec = spec_elsewhere(self, fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _PatchingLoader(spec.loader)
        return spec

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.Comm = Comm
        module.CommManager = CommManager
        return module

    def exec_module(self, module):
        pass


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        if module.__name__ == "ipywidgets" and _manager is not None:
            _manager.kernel.ipython()
        self._loader.exec_module(module)
        if module.__name__ == "comm":
            _patch_comm_package(module)
