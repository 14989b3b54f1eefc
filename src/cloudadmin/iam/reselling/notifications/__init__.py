"""Notification settings of a reseller."""
