"""WSGI entry point: ``gunicorn example_app.wsgi:app``."""

from example_app import create_app

app = create_app()
