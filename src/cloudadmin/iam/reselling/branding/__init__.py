"""Branding settings, logo and favicon."""
