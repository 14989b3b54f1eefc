"""What operators watch: Prometheus metrics (/metrics) and the access log."""
