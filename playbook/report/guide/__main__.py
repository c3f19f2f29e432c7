"""`python -m playbook.report.guide`: the field-guide tool (rerun the labs, rewrite the docs' generated regions)."""

from playbook.report.guide import main

raise SystemExit(main())
