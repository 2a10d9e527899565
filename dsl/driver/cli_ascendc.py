"""``dslc compile FILE --target ascendc -o DIR``: one CANN AscendC project per root layer.

Each layer goes to ``DIR/<layer>/`` (kernels header, host ``.asc``, ``CMakeLists.txt``,
``README.md``). Every layer is rendered and checked before the first file is written, so a
layer the target refuses (A7xx, with its location) leaves ``DIR`` as it was.
"""

from __future__ import annotations

from pathlib import Path


def compile_to_ascendc(session) -> int:
    from dsl import __version__
    from dsl.driver.cli import UsageError
    from dsl.frontend import compile_file
    from lowering.codegen.ascendc import names
    from lowering.codegen.ascendc.emit import content_hash, render_project
    from runtime.loader import write_atomically

    args = session.args
    source = Path(args.file)
    graphs = compile_file(source, session.overrides or None, args.layer)
    out_dir = Path(args.output)
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"-o {out_dir}: not a directory")
    text = source.read_text(encoding="utf-8")
    projects = []
    for graph in graphs:
        key = content_hash(text, repr(sorted(graph.env().items())), graph.name, __version__)
        projects.append((names.encode(graph.name), render_project(graph, key[:16], __version__)))
    for folder, files in projects:
        target = out_dir / folder
        target.mkdir(parents=True, exist_ok=True)
        for name, content in files.items():
            write_atomically(target / name, content)
        print(f"wrote {target}/ ({', '.join(files)})")
    return 0
