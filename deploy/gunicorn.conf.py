"""gunicorn behind nginx (deploy/nginx-site.conf): ``gunicorn -c deploy/gunicorn.conf.py example_app.wsgi:app``."""

# The one proxy in front, nginx, is believed about the client's address (post_worker_init below).
from werkzeug.middleware.proxy_fix import ProxyFix

# Tells flask-tooldiscovery, in each worker process, gunicorn's threads per worker and number of
# workers as gunicorn resolved them (this file, the command line, GUNICORN_CMD_ARGS): the call
# slots leave one thread free, and several workers without a shared state store are refused at start
# when something must happen once (epi-hmac nonces, approvals, rollbacks), else warned about.
# A post_fork of your own calls it with the same two arguments.
from flask_tooldiscovery.serving.worker_threads import post_fork  # noqa: F401

# A worker that stops gracefully (kill -HUP reload, kill -TERM, max_requests) first lets the tasks it
# accepted end and sends their callbacks, within graceful_timeout; what is left is logged (tasks to
# their lease, callbacks to the state store). A worker_exit of your own calls it with the same two arguments.
from flask_tooldiscovery.tasks.shutdown import worker_exit  # noqa: F401

# Only nginx connects: loopback, the address of nginx's upstream.
bind = "127.0.0.1:8000"
# Threads for tools that wait on I/O; at most threads - 1 tools run at once per worker
# (TOOLDISCOVERY_MAX_CONCURRENT_CALLS), so discovery and health always find a thread.
worker_class = "gthread"
workers = 4  # about 2 x cores
threads = 8
# X-Forwarded-Proto is believed from nginx only.
forwarded_allow_ips = "127.0.0.1"


def post_worker_init(worker):
    """nginx (deploy/nginx-site.conf) is the one proxy in front: believe the last X-Forwarded-For
    address (the one nginx adds) and X-Forwarded-Proto, so that rate limits, logs and
    request.remote_addr see each client rather than nginx's 127.0.0.1. Wrapping the loaded app
    here, outside Flask's wsgi_app, keeps flask-tooldiscovery's learned discovery answers on."""
    worker.wsgi = ProxyFix(worker.wsgi, x_for=1, x_proto=1)
