"""Webhook subscriptions to user action events (beside the AMQP ones)."""
