"""``dslc compile FILE --target ascendc -o DIR``: one CANN AscendC project per root layer.

Each layer goes to ``DIR/<layer>/`` (kernels header, host ``.asc``, ``CMakeLists.txt``,
``README.md``). Every layer is rendered and checked before the first file is written, so a
layer the target refuses (A7xx, with its location) leaves ``DIR`` as it was; so does a
project whose C++ fails the toolchain check (``lowering.codegen.ascendc.toolchain``: always
lexically, and with ``g++ -fsyntax-only`` against the headers when ``DSLC_ASC_DEVKIT`` is
set), which is a dslc bug and reported as an internal error.
"""

from __future__ import annotations

from pathlib import Path


def compile_to_ascendc(session) -> int:
    from dsl.driver.session import UsageError
    from dsl.frontend import compile_text, read_source
    from dsl.version import __version__
    from lowering.codegen.ascendc import names, toolchain
    from lowering.codegen.ascendc.emit import content_hash, render_project
    from runtime.files import ensure_directory, write_text
    from runtime.loader import cache_dir

    args = session.args
    source = Path(args.file)
    text = read_source(source)
    graphs = compile_text(text, str(source), session.overrides or None, args.layer)
    projects = []
    for graph in graphs:
        key = content_hash(text, repr(sorted(graph.env().items())), graph.name, __version__)
        projects.append((names.encode(graph.name), render_project(graph, key[:16], __version__)))
    checked = ""
    for _, files in projects:
        try:
            checked = toolchain.check_project(files, cache_dir())
        except toolchain.DevkitError as err:
            raise UsageError(f"{toolchain.ENV}: {err}") from None
    out_dir = ensure_directory(args.output)  # only once every project rendered: a refusal writes nothing
    for folder, files in projects:
        target = out_dir / folder
        for name, content in files.items():
            write_text(target / name, content)
        print(f"wrote {target}/ ({', '.join(files)}; checked: {checked})")
    return 0
