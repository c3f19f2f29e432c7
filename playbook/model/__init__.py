"""The one data model: tidy tables and the Bundle (schema), and the run-directory format (run_layout)."""
