"""Client accounts: operation 1 (PATCH /iam/clients/{clientId})."""
