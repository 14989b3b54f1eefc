"""Kubernetes cluster price preview (operation 16) and the price catalogue."""
