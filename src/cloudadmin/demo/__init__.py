"""Demo data: a landscape document for `cloudadmin serve --demo`."""

from cloudadmin.demo.landscape import build_demo

__all__ = ["build_demo"]
