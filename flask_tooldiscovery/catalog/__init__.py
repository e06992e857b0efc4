"""What an app registers besides tools: prompts, readable resources, Agent Skills, the completion
of their arguments, and the tool UIs (Jinja templates offered as a tool's interface)."""
