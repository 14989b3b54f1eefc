"""API tokens of an account: /iam/clients/{clientId}/tokens (docs/iam.md, "API tokens")."""
