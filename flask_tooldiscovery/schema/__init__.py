"""The JSON-Schema engine: a function's signature, type hints and docstring turned into JSON Schema,
explicit schemas (dicts, marshmallow, pydantic) checked and read, string arguments coerced to
their declared types, and a call's arguments validated against its tool's input schema (a check
compiled once per schema, :mod:`.quick_check`, says quickly that most are valid). It knows no
tool: the tool model registers what it must treat specially (:mod:`.hooks`: the injected
``ToolContext``, the rich results)."""
