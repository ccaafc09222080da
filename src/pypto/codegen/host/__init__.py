"""Host-level code generation of distributed programs (SPEC §8): the host driver as Python."""

from .driver import HOST_DRIVER_FILE, render_host_driver

__all__ = ["render_host_driver", "HOST_DRIVER_FILE"]
