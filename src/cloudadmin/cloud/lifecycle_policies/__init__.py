"""Snapshot lifecycle policies: read ."""
