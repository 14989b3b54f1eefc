"""The vendor settings section (docs/portal.md, "Vendor settings"): a reseller's
branding with a live preview (vendor_branding.py, vendor_preview.py), its mail server
and test mail (vendor_mail.py), and its notification settings
(vendor_notifications.py)."""

from __future__ import annotations

from fastapi import APIRouter

from cloudadmin.portal.sections import vendor_branding, vendor_mail, vendor_notifications

router = APIRouter(include_in_schema=False)
for part in (vendor_branding, vendor_mail, vendor_notifications):
    router.include_router(part.router)
