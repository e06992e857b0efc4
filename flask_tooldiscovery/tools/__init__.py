"""The tool model: :class:`~.model.Tool`, :class:`~.model.ToolContext` and
:class:`~.model.ToolError`, tools made from decorated functions and from providers, the registry
and the tool set in force for a request, the rich results and envelope a tool may return, and a
call's outcome (what dialects read).
A registry tells its watchers of a change and asks its checks about a new tool (:mod:`.watchers`)."""
