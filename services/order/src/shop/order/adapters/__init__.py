"""Concrete adapters: database tables and queries."""
