"""Cloud users: the caller's account users (operation 17)."""
