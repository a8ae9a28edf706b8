"""Canonical code shared by the scripts, which carry checked copies of it (see tools/check_copies.py)."""
