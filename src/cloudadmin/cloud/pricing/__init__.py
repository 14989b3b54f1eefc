"""Kubernetes cluster price preview  and the price catalogue."""
