"""``dslc compile FILE --target ascendc -o DIR``: one CANN AscendC project per root layer.

Each layer goes to ``DIR/<layer>/`` (kernels header, host ``.asc``, ``CMakeLists.txt``,
``README.md``). Every layer is rendered and checked before the first file is written, so a
layer the target refuses (A7xx, with its location) leaves ``DIR`` as it was.
"""

from __future__ import annotations

from pathlib import Path


def compile_to_ascendc(session) -> int:
    from dsl import __version__
    from dsl.frontend import compile_text, read_source
    from lowering.codegen.ascendc import names
    from lowering.codegen.ascendc.emit import content_hash, render_project
    from runtime.files import ensure_directory, write_text

    args = session.args
    source = Path(args.file)
    text = read_source(source)
    graphs = compile_text(text, str(source), session.overrides or None, args.layer)
    projects = []
    for graph in graphs:
        key = content_hash(text, repr(sorted(graph.env().items())), graph.name, __version__)
        projects.append((names.encode(graph.name), render_project(graph, key[:16], __version__)))
    out_dir = ensure_directory(args.output)  # only once every project rendered: a refusal writes nothing
    for folder, files in projects:
        target = out_dir / folder
        for name, content in files.items():
            write_text(target / name, content)
        print(f"wrote {target}/ ({', '.join(files)})")
    return 0
