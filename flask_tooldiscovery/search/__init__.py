"""Tool search: an index of a tool set (BM25 over what a tool is for, ranked again by the kind of
action a query asks for and the vocabulary people use), so that a client with a small context can
find the few tools it needs among thousands."""
