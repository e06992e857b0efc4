"""Every tool-quality rule in one place, and ``flask tools check``'s reading of them.

A :class:`~.targets.Target` is one consumer of tool definitions: a model vendor's function calling
(:mod:`.openai_strict`, :mod:`.gemini`, Anthropic in :mod:`.object_root`), a protocol's clients
(:mod:`.protocols`: MCP, Opal, OXP, TDP, each declared by its dialect as ``Dialect.target``), or a
directory's review (:mod:`.claude_directory`, :mod:`.chatgpt`, declared by the MCP dialect as
``more_targets``). Each says what it refuses in a tool and how to simplify a schema so it accepts
it (:mod:`.schema_rewrite`). :mod:`.check` is the lint ``flask tools check`` runs: the rules every
tool meets, each mounted dialect's ``Dialect.lint_tool``, or the chosen targets'. Nothing here
imports a dialect: dialects hand their rules in through the ``Dialect`` contract.
"""
