"""Screens pushed over the panels: confirm, help, jump, schedule detail, audit log."""
