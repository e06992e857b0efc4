"""What a tool holds: ``bench/bench_scale.py``'s traced pass (N different decorated tools,
``init_app``, the first Opal discovery document) with a tracemalloc snapshot grouped by the line
that allocated (and, with ``-t``, by the package line nearest the allocation).

Run: ``python bench/memory_per_tool.py [N] [-t]`` (default 10,000 tools).
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import make_tools, start


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 10_000
    by_package_line = "-t" in sys.argv
    funcs = make_tools(n)
    gc.collect()
    tracemalloc.start(25 if by_package_line else 1)
    before = tracemalloc.take_snapshot()
    app = start(funcs)[0]
    gc.collect()
    after = tracemalloc.take_snapshot()
    total = sum(s.size_diff for s in after.compare_to(before, "filename"))
    print(f"{n} tools: {total / n / 1024:.2f} KB a tool ({total / 1e6:.1f} MB)")
    if by_package_line:
        sizes: dict[str, int] = {}
        for stat in after.statistics("traceback"):
            ours = [f for f in stat.traceback if "flask_tooldiscovery" in f.filename]
            frame = ours[-1] if ours else stat.traceback[-1]  # the package line nearest the allocation
            where = f"{frame.filename.rpartition('/')[2]}:{frame.lineno}"
            sizes[where] = sizes.get(where, 0) + stat.size
        for where, size in sorted(sizes.items(), key=lambda kv: -kv[1])[:30]:
            print(f"{size / n:8.0f} B/tool  {where}")
    else:
        for stat in after.compare_to(before, "lineno")[:30]:
            frame = stat.traceback[0]
            print(f"{stat.size_diff / n:8.0f} B/tool  {frame.filename.rpartition('/')[2]}:{frame.lineno}")
    del app


if __name__ == "__main__":
    main()
