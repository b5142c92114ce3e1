"""The console's own rules, with no I/O: passwords, the reading of AsyncAPI documents and of
message bodies."""
