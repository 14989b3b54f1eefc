"""Users created inside an account: operation 3."""
