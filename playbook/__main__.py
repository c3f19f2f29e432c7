"""`python -m playbook` is the same as the `playbook` command."""

from playbook.cli import main

raise SystemExit(main())
