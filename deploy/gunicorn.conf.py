"""gunicorn behind nginx (deploy/nginx-site.conf): ``gunicorn -c deploy/gunicorn.conf.py example_app.wsgi:app``."""

# Only nginx connects: loopback, the address of nginx's upstream.
bind = "127.0.0.1:8000"
# Threads for tools that wait on I/O; at most threads - 1 tools run at once per worker
# (TOOLDISCOVERY_MAX_CONCURRENT_CALLS), so discovery and health always find a thread.
worker_class = "gthread"
workers = 4  # about 2 x cores
threads = 8
# X-Forwarded-Proto is believed from nginx only.
forwarded_allow_ips = "127.0.0.1"
