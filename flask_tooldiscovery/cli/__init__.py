"""``flask tools``: list, show, call, export and check the app's tools from the command line
(checks against targets, and the declared examples replayed through every mounted dialect)."""
