"""Load balancer listeners: read, list and rename ."""
