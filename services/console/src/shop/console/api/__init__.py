"""The console's web pages: FastAPI routes rendering Jinja2 templates, as thin as possible."""
