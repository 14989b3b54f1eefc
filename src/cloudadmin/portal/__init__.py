"""The Admin Portal: server-rendered pages under /portal for operators and resellers
(docs/portal.md). It calls the domains' services like the API does and writes no SQL of
its own beyond its sign-in sessions."""
