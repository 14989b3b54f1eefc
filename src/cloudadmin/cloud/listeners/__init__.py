"""Load balancer listeners: read, list, rename (v1) and change through a task (v2)."""
