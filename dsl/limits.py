"""The documented limits of the front end (docs/language.md, "Limits"), in one place.

Each keeps the work of one stage bounded by the size of the source and these numbers, never by
a value the source computes; exceeding one is a located diagnostic naming the limit, never a
hang, a MemoryError or a RecursionError.
"""

MAX_SOURCE_BYTES = 16 * 1024 * 1024  # a source file (E102)
MAX_SYNTAX_ERRORS = 20  # syntax errors reported per file before giving up (E101)
MAX_NESTING = 200  # brackets and braces open at once (E105)
MAX_EXPRESSION_DEPTH = 100  # operators, calls and subscripts nested in one expression (E105)
MAX_TREE_DEPTH = 2000  # parse-tree levels; far above any expression within the line above (E105)
MAX_LAYER_ITERATIONS = 1_000_000  # layer-loop iterations per graph (E404)
MAX_TASKS = 100_000  # task instances per graph, task arrays and called layers included (E108)


class LimitReached(Exception):
    """Raised after the diagnostic of a limit that stops elaboration at once (MAX_TASKS): one
    error naming the limit, not one per declaration past it."""
