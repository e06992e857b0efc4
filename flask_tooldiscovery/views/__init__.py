"""Existing Flask views served as tools: their schemas read from what each view declares, and a
call run as a sub-request through the app itself."""
