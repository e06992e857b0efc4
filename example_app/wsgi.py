"""WSGI entry point: ``gunicorn example_app.wsgi:app``.

Every worker process builds its own app, so without ``FLASK_SECRET_KEY`` each would seal approvals
with a key of its own, and an approval asked on one worker (or before a restart) would be refused on
another: said once per worker here, where several processes serve the app, rather than by
``create_app``, which ``flask run`` and the read-only ``flask tools`` commands load in one process.
"""

import os

from example_app import create_app

app = create_app()

if "FLASK_SECRET_KEY" not in os.environ:
    app.logger.warning("FLASK_SECRET_KEY is not set: approvals use a key of this process only, so one asked on "
                       "another worker or before a restart is refused")
