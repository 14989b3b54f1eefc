"""Monthly reports (docs/portal.md, "Monthly report"): a month's addendums per account,
product and plan with their active days, computed by a job beside the dispatcher."""
