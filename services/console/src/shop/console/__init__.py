"""The operators' console (see services/console/README.md)."""
