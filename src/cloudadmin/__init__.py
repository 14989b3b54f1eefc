"""cloudadmin: Account, Billing and Cloud Administration API."""

__version__ = "0.1.0"
