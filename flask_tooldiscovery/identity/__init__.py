"""Who is calling, and how they got their credentials: the identity sources every dialect's
requests go through (verifiers, hooks, recipes for the login an app already has) and, with the
``oauth`` extra, the app as its own users' OAuth 2.1 authorization server."""
