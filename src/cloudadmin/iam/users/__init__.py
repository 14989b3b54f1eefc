"""User creation with a new account: operation 2 (POST /iam/users)."""
