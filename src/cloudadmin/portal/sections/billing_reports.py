"""The Billing section's monthly reports (docs/portal.md, "Monthly report"): the scope's
reports with their status, a form to request one for a month, the CSV of a ready one.
The job that computes them runs beside the dispatcher (billing/reports/runner.py); while
one is Generating, htmx polls the list, and without JavaScript a reload shows it."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Depends
from starlette.responses import Response

from cloudadmin.billing.reports import service
from cloudadmin.errors import ApiError, NotFound
from cloudadmin.iam.sign_in.credentials import PortalKind
from cloudadmin.portal.context import PREFIX, Portal, PortalRoute, only, see_other
from cloudadmin.portal.forms import Form, errors_of, read_form

router = APIRouter(
    prefix=f"{PREFIX}/billing/reports", route_class=PortalRoute, include_in_schema=False
)

# Operators and resellers' users; a seller gets the 404 page.
ReportsPage = Annotated[Portal, Depends(only(PortalKind.operator, PortalKind.reseller))]

PAGE_SIZE = 25
LABELS = {service.GENERATING: "Generating", service.READY: "Ready", service.FAILED: "Failed"}
TITLE = "Billing: monthly reports"
PATH = f"{PREFIX}/billing/reports"


def _page_number(portal: Portal) -> int:
    raw = portal.request.query_params.get("page", "1")
    return int(raw) if raw.isdigit() and 0 < int(raw) <= 100_000 else 1


def _url(number: int) -> str:
    return PATH if number == 1 else f"{PATH}?page={number}"


async def _render(portal: Portal, form: Form | None, *, status: int = 200) -> Response:
    number = _page_number(portal)
    reports, total = await service.list_reports(
        portal.db, portal.caller, limit=PAGE_SIZE, offset=(number - 1) * PAGE_SIZE
    )
    scope = (
        "over every account"
        if portal.caller.is_operator
        else "over your account and your clients' accounts"
    )
    return portal.page_or_part(
        TITLE,
        "billing/reports.html",
        "billing/reports_table.html",
        status=status,
        form=form,
        scope=scope,
        reports=reports,
        total=total,
        labels=LABELS,
        generating=any(r.status == service.GENERATING for r in reports),
        self_url=_url(number),
        previous=_url(number - 1) if number > 1 else None,
        next=_url(number + 1) if number * PAGE_SIZE < total else None,
    )


@router.get("")
async def monthly_reports(portal: ReportsPage) -> Response:
    return await _render(portal, None)


@router.post("")
async def request_monthly_report(portal: ReportsPage) -> Response:
    """Requests the report of the month typed; a refusal shows the form again (400)."""
    form = await read_form(portal.request)
    if form.ok:
        try:
            await service.request_report(portal.db, portal.caller, form.get("month"))
        except ApiError as refused:
            if refused.status_code != 400:
                raise
            form.refuse(errors_of(refused))
    if not form.ok:
        return await _render(portal, form, status=400)
    return see_other(PATH)


@router.get("/{report_id}/download")
async def download_monthly_report(portal: ReportsPage, report_id: int) -> Response:
    """The CSV of a ready report of the caller's scope; any other id is the 404 page."""
    if not 0 < report_id < 2**53:
        raise NotFound()
    report = await service.report_csv(portal.db, portal.caller, report_id)
    filename = f"monthly-report-{report.month}-{report.id}.csv"
    return Response(
        report.content or "",
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f"attachment; filename*=UTF-8''{quote(filename)}"},
    )
