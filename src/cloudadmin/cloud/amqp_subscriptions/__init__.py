"""AMQP subscriptions to user action events (operation 18 and its companions)."""
