"""Cloud users: the caller's account users ."""
