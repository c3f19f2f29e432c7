"""Reusable fixes users import into their own training code."""
