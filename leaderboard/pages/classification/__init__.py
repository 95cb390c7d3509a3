"""The Classification page: its numbers, records and view."""
