"""A reseller's branding (operations 7, 8) and notification settings (9-11)."""
