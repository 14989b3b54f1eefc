"""Snapshot lifecycle policies: read (operation 15)."""
