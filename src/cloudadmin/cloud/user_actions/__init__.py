"""The user-action log: GET /cloud/v1/user_actions (the records the events carry)."""
