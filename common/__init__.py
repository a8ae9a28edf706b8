"""Canonical code shared by the scripts, which carry checked copies of it (see common/check_copies.py)."""
