"""A second device simulated on the CPU: code that runs here would not mix devices on a GPU.

On CUDA, an operation that meets a tensor on the device and a host tensor of one element or
more fails ("Expected all tensors to be on the same device"), and so does reading a device
tensor as a numpy array; on the CPU, where the tests run, both are one device and nothing
fails. The GPU check (benchmarks/gpu_check.sh) found such mistakes only where a GPU was lent.
:class:`SimulatedDevice` makes them fail here: inside it, tensors are "on the device" when

- they are a model's parameters or buffers (:meth:`SimulatedDevice.place`), or were computed
  from a tensor on the device;
- they were made with ``device=`` the device or moved there with ``.to(device)``, the device
  being what such a tensor reports as its ``.device`` (:data:`DEVICE`, not the CPU: code takes
  its device branches) and what code reads from a model (``next(model.parameters()).device``);

and back "on the host" after ``.cpu()``, ``.to("cpu")`` or ``.tolist()`` / ``.item()``. Then an
operation that mixes the two (a 0-dim host tensor excepted, as CUDA allows; indexing a device
tensor with host indices allowed, as CUDA does) or a numpy conversion of a device tensor
raises :class:`DeviceMixError`. Gradients of device tensors are on the device.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten, tree_map

MARK = "_on_simulated_device"
# What a tensor on the device reports as its device: not the CPU, so that code takes its
# device branches (``x.device.type != "cpu"``), and not CUDA, whose own calls need a GPU.
DEVICE = torch.device("meta")
TO_HOST = {"cpu", "tolist", "item"}
# Reads of a device tensor's values on the host: on CUDA each waits for the device to finish
# all it was given (a synchronisation), so a GPU path should make few, and none per layer.
WAITS = TO_HOST | {"__bool__", "__int__", "__float__", "__index__"}
ACROSS = {"__getitem__", "copy_"}  # host indices into a device tensor, and the copy itself, are fine


class DeviceMixError(RuntimeError):
    """A host tensor met a device tensor (as on CUDA)."""


def on_device(x) -> bool:
    return isinstance(x, torch.Tensor) and getattr(x, MARK, False)


def _name(func) -> str:
    if getattr(func, "__name__", "") == "__get__":  # an attribute: x.device, x.grad
        return getattr(getattr(func, "__self__", None), "__name__", "__get__")
    return getattr(func, "__name__", "") or str(func)


def _target(name: str, args, kwargs):
    target = kwargs.get("device")
    if name == "to" and target is None and len(args) > 1 and isinstance(args[1], (str, torch.device)):
        target = args[1]
    return target


def _kind(target) -> str | None:
    """The device type a ``device=`` argument names ("cpu", DEVICE's "meta", ...), else None."""
    return torch.device(target).type if isinstance(target, (str, torch.device)) else None


def _to_cpu(args, kwargs):
    """The call's arguments with the simulated device replaced by the CPU, where it really runs."""
    def swap(x):
        return torch.device("cpu") if _kind(x) == DEVICE.type else x
    return tree_map(swap, args), tree_map(swap, kwargs)


def _mark(x):
    if isinstance(x, torch.Tensor):
        setattr(x, MARK, True)
    return x


def _alias(x):
    return x.view_as(x) if isinstance(x, torch.Tensor) else x


class SimulatedDevice(TorchFunctionMode):
    """Inside ``with SimulatedDevice() as device:`` torch marks what is on the device and
    refuses to mix it with the host (module docstring); ``device.waits`` lists each read of a
    device tensor on the host (:data:`WAITS`: what would wait for a GPU), by name."""

    def __init__(self):
        super().__init__()
        self.waits: list[str] = []

    def place(self, module: torch.nn.Module) -> torch.nn.Module:
        """Put ``module``'s parameters and buffers on the device."""
        for tensor in [*module.parameters(), *module.buffers()]:
            _mark(tensor)
        return module

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = _name(func)
        flat = tree_flatten((args, kwargs))[0]
        device = [x for x in flat if on_device(x)]
        if name == "device" and device:
            return DEVICE
        if name == "to" and len(args) > 1 and isinstance(args[1], torch.Tensor):  # x.to(other): a transfer
            out = _alias(func(*args, **kwargs))
            return _mark(out) if on_device(args[1]) else out
        if device:
            self._check(name, flat, args)
        target = _target(name, args, kwargs)
        to_host = name in TO_HOST or (name == "to" and _kind(target) == "cpu")
        if device and (to_host or name in WAITS):
            self.waits.append(name)
        if to_host:
            return tree_map(_alias, func(*args, **kwargs))  # on the CPU the same tensor: a new one
        placing = _kind(target) == DEVICE.type
        if placing:
            args, kwargs = _to_cpu(args, kwargs)
        out = func(*args, **kwargs)
        if name == "to" and placing:
            out = _alias(out)
        if device or placing:
            tree_map(_mark, out)
        return out

    @staticmethod
    def _check(name: str, flat, args) -> None:
        if name in ("__array__", "numpy"):
            raise DeviceMixError(f"{name}: a device tensor read as a numpy array (call .cpu() first)")
        if name in ACROSS:
            return
        if name == "__setitem__":  # the value written must be on the device
            flat = tree_flatten(args[2:])[0]
        host = [x for x in flat if isinstance(x, torch.Tensor) and not on_device(x) and x.dim() > 0]
        arrays = [x for x in flat if isinstance(x, np.ndarray) and x.ndim > 0]
        if host or arrays:
            shapes = [tuple(x.shape) for x in host + arrays]
            raise DeviceMixError(f"{name}: host arrays of shapes {shapes} meet a device tensor "
                                 "(on CUDA: Expected all tensors to be on the same device)")
