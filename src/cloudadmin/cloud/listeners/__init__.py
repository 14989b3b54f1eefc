"""Load balancer listeners: read, list and rename (operation 14)."""
