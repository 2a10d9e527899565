"""The generated AscendC projects against the real AscendC class library headers.

Every model layer and simulator fixture the target supports is type-checked with
``g++ -std=c++17 -fsyntax-only`` in CPU-debug mode (dav-2201) against asc-devkit (found
through ``DSLC_ASC_DEVKIT``) and the declaration-only tikicpulib stand-in (``lowering/codegen/ascendc/headers``) -- kernels and host
program, every kernel of a layer in one translation unit. The layers the target refuses are
pinned with the code of their first refusal, so support cannot silently shrink. A second
test proves the check bites: deliberate API mistakes in a kernel must fail it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from asctoolchain import bisheng, find_devkit, one_unit, typecheck
from ascutil import emit, kernels, render_all

from lowering.codegen.ascendc.toolchain import ACL_SHIM, TIKICPULIB_SHIM
from lowering.source import CompileError

#: file:layer -> None (supported) or the A7xx code of the first refusal, and why.
EXPECTED = {
    "models/deepseek_v4_flash/hc_post.dsl:hc_post": None,
    "models/deepseek_v4_flash/hc_pre.dsl:hc_pre": None,
    "models/deepseek_v4_flash/hc_pre_fused.dsl:hc_pre_fused": None,  # one MIX kernel with two SyncAll<false>
    "models/deepseek_v4_flash/moe.dsl:moe": None,
    # csa_attn branches on a tile (A703); csa_o_lora needs 417 KiB of UB (A711)
    "models/deepseek_v4_flash/prefill_csa.dsl:prefill_csa": "A703",
    # idx_query needs 612 KiB of UB, idx_score 448 KiB (A711), at the real configuration
    "models/deepseek_v4_flash/prefill_indexer.dsl:prefill_indexer": "A711",
    "tests/fixtures/layers/moe_dispatch.dsl:moe_dispatch": None,
    "tests/fixtures/layers/name_collision.dsl:name_collision": None,
    "tests/fixtures/layers/split_k.dsl:hc_pre_linear": None,
    "tests/fixtures/run/handshake_post.dsl:handshake": None,
    "tests/fixtures/run/handshake_pre.dsl:handshake": None,
    "tests/fixtures/run/hc_linear_atomic.dsl:hc_lin": None,
    "tests/fixtures/run/splitk_atomic.dsl:splitk_atomic": None,
    "tests/fixtures/run/splitk_ordered.dsl:splitk_ordered": None,
    "tests/fixtures/run/splitk_reduce.dsl:splitk_reduce": None,
    "tests/fixtures/run/topk_row.dsl:topk_row": None,
    "tests/fixtures/seed/combine_post.dsl:moe_combine": None,
    "tests/fixtures/seed/combine_pre.dsl:moe_combine": None,
    "tests/fixtures/seed/csa_guard_post.dsl:prefill_csa": None,
    "tests/fixtures/seed/csa_guard_pre.dsl:prefill_csa": None,
    "tests/fixtures/seed/dispatch_post.dsl:moe_dispatch": None,  # i8 B [K, N]: LoadDataWithTranspose
    "tests/fixtures/seed/dispatch_pre.dsl:moe_dispatch": None,
    "tests/fixtures/seed/epoch_restart_post.dsl:moe_dispatch_pro": None,
    "tests/fixtures/seed/epoch_restart_pre.dsl:moe_dispatch_pro": None,
    "tests/fixtures/seed/gm_roundtrip_out_post.dsl:pack_rows": None,
    "tests/fixtures/seed/gm_roundtrip_out_pre.dsl:pack_rows": None,
    "tests/fixtures/seed/hc_head_oob_post.dsl:hc_head": None,  # valid() rows on the cube: a runtime Nd2Nz
    "tests/fixtures/seed/hc_head_oob_pre.dsl:hc_head": None,  # x's rows a runtime scalar: its capacity
    "tests/fixtures/seed/hc_pre_post.dsl:hc_pre": None,
    "tests/fixtures/seed/hc_pre_pre.dsl:hc_pre": None,
    "tests/fixtures/seed/indexer_topk_post.dsl:prefill_indexer": None,
    "tests/fixtures/seed/indexer_topk_pre.dsl:prefill_indexer": None,
    "tests/fixtures/seed/kv_writeback_war_post.dsl:kv_decode": "A701",  # f32 matmul without b_trans
    "tests/fixtures/seed/kv_writeback_war_pre.dsl:kv_decode": "A701",  # f32 matmul without b_trans
    "tests/fixtures/seed/meta_manual_dep_post.dsl:dispatch_meta": None,
    "tests/fixtures/seed/meta_manual_dep_pre.dsl:dispatch_meta": None,
    "tests/fixtures/seed/mixed_store_paths_post.dsl:compact": None,
    "tests/fixtures/seed/mixed_store_paths_pre.dsl:compact": None,
    "tests/fixtures/seed/moe_pre.dsl:moe": None,
    "tests/fixtures/seed/rowcount_handshake_post.dsl:fused_scatter": None,
    "tests/fixtures/seed/rowcount_handshake_pre.dsl:fused_scatter": None,
}


@pytest.fixture(scope="module")
def projects() -> dict:
    return render_all()


@pytest.fixture(scope="module")
def devkit():
    found, why = find_devkit()
    if found is None:
        pytest.skip(f"no AscendC headers: {why}")
    return found


def _status(result) -> str | None:
    return result.diagnostics[0].code if isinstance(result, CompileError) else None


def test_support_table_is_as_documented(projects):
    assert {k: _status(v) for k, v in projects.items()} == EXPECTED


def _units(projects: dict) -> list[list[tuple[str, dict[str, str]]]]:
    """Projects grouped so that no layer name repeats inside one unit (extern "C" symbols)."""
    units: list[list[tuple[str, dict[str, str]]]] = []
    for name, files in projects.items():
        if isinstance(files, CompileError):
            continue
        stem = next(f for f in files if f.endswith("_kernels.h"))
        for unit in units:
            if all(stem not in other for _, other in unit):
                unit.append((name, files))
                break
        else:
            units.append([(name, files)])
    return units


def _write(tmp: Path, unit: list[tuple[str, dict[str, str]]]) -> None:
    for _, files in unit:
        for fname, text in files.items():
            (tmp / fname).write_text(text, encoding="utf-8")
    (tmp / "unit.cpp").write_text(one_unit([files for _, files in unit]), encoding="utf-8")


def _inline() -> dict[str, dict[str, str]]:
    """Golden-text sources: the MIX kernels (hand-offs both ways, a loop, a barrier, a rescale), the
    mask / strided / gather_rows kernels and the [K, N] matmuls."""
    from test_ascendc_cube_kn import BF16_KN, I8_KN
    from test_ascendc_logic import COMPARE, GATHER_ROWS, LONG_ROWS, PACK, ROPE
    from test_ascendc_mix import HANDOFFS, PHASES, RESCALE
    from test_ascendc_runtime_rows import RUNTIME_ROWS

    return {
        "mix:handoffs": emit(HANDOFFS),
        "mix:phases": emit(PHASES),
        "mix:rescale": emit(RESCALE),
        **{
            f"logic:{k}": emit(v)
            for k, v in (("pack", PACK), ("cmp", COMPARE), ("rope", ROPE), ("gr", GATHER_ROWS))
        },
        "logic:long_rows": emit(LONG_ROWS),
        "cube:bf16_kn": emit(BF16_KN),
        "cube:i8_kn": emit(I8_KN),
        "rows:runtime": emit(RUNTIME_ROWS),
    }


def test_every_supported_layer_type_checks_against_the_headers(devkit, projects, tmp_path):
    failures = []
    for i, unit in enumerate(_units({**projects, **_inline()})):
        work = tmp_path / f"unit{i}"
        work.mkdir()
        _write(work, unit)
        proc = typecheck(devkit, work, "unit.cpp")
        if proc.returncode != 0:
            errors = [line for line in proc.stderr.splitlines() if "error" in line]
            failures.append(f"unit {i} ({', '.join(n for n, _ in unit)}):\n" + "\n".join(errors[:20]))
    assert not failures, "\n\n".join(failures)


#: mistake -> (layer whose kernels it breaks, pattern, replacement)
MISTAKES = {
    "wrong API name": ("hc_post", r"AscendC::Muls\(", "AscendC::Mulss("),
    "wrong arity": ("hc_post", r"AscendC::RoundMode::CAST_NONE, ", ""),
    "unknown enum member": ("hc_post", r"CAST_NONE", "CAST_NONEX"),
    "wrong struct field count": (
        "hc_post",
        r"AscendC::DataCopyParams\{8, 32, 224, 0\}",
        "AscendC::DataCopyParams{8, 32, 224, 0, 7, 7}",
    ),
    "wrong argument type": ("hc_post", r"inQueue\.EnQue\(in2\)", "inQueue.EnQue(t_x)"),
    "wrong template argument": (
        "hc_post",
        r"inQueue\.DeQue<bfloat16_t>\(\)",
        "inQueue.DeQue<AscendC::TPipe>()",
    ),
    "cross-core set without its mode": (
        "mx",
        r"CrossCoreSetFlag<0x2, PIPE_FIX>",
        "CrossCoreSetFlag<PIPE_FIX>",
    ),
    "unknown pipe": ("mx", r"CrossCoreSetFlag<0x2, PIPE_MTE3>", "CrossCoreSetFlag<0x2, PIPE_MTE9>"),
    "task ratio with an argument": ("mx", r"GetTaskRatio\(\)", "GetTaskRatio(1)"),
    "SyncAll of a non-bool": ("ph", r"SyncAll<false>", "SyncAll<AscendC::TPipe>"),
    "unknown compare mode": ("pack", r"CMPMODE::GE", "CMPMODE::GEQ"),
    "Select without its mode": ("pack", r"AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE, ", ""),
    "GatherMask without its count": ("rope", r", kept3\)", ")"),
    "ShiftRight of a float tile into an int one": (
        "pack",
        r"ShiftRight\(ub12, in1,",
        "ShiftRight(ub12, ub2,",
    ),
    "Brcb with a block count": ("rope", r"BrcbRepeatParams\{1, 8\}", "BrcbRepeatParams{1, 8, 8}"),
    "transposing load with 2D params": (
        "mq",
        r"LoadData2dTransposeParams\{0, 2, 16, 1, 0\}",
        "LoadData2DParams{0, 2, 16, 0, 0, true, 0}",
    ),
}


def test_the_check_catches_api_mistakes(devkit, projects, tmp_path):
    """Each mistake goes into its own copy of a kernels header (own symbols and guard); one
    compile of all the copies must report an error in every copy."""
    from test_ascendc_cube_kn import I8_KN
    from test_ascendc_logic import PACK, ROPE
    from test_ascendc_mix import HANDOFFS, PHASES

    texts = {
        "hc_post": kernels(projects["models/deepseek_v4_flash/hc_post.dsl:hc_post"]),
        "mx": kernels(emit(HANDOFFS)),
        "ph": kernels(emit(PHASES)),
        "pack": kernels(emit(PACK)),
        "rope": kernels(emit(ROPE)),
        "mq": kernels(emit(I8_KN)),
    }
    includes = []
    for i, (mistake, (layer, pattern, replacement)) in enumerate(sorted(MISTAKES.items())):
        broken, n = re.subn(pattern, replacement, texts[layer], count=1)
        assert n == 1, f"the mistake {mistake!r} found nothing to break"
        broken = broken.replace(f"{layer}zk", f"{layer}m{i}zk").replace(
            f"DSLC_{layer.upper()}_KERNELS_H", f"MISTAKE{i}_H"
        )
        (tmp_path / f"mistake{i}.h").write_text(broken, encoding="utf-8")
        includes.append(f'#include "mistake{i}.h"')
    (tmp_path / "unit.cpp").write_text("\n".join(includes) + "\n", encoding="utf-8")
    proc = typecheck(devkit, tmp_path, "unit.cpp")
    assert proc.returncode != 0
    missed = [
        mistake
        for i, mistake in enumerate(sorted(MISTAKES))
        if not re.search(rf"mistake{i}\.h:\d+:\d+: error", proc.stderr)
    ]
    assert missed == [], f"g++ accepted: {missed}"


def test_bisheng_compiles_a_project_for_real(projects, tmp_path):
    compiler = bisheng()
    if compiler is None:
        pytest.skip("bisheng is not on PATH (CANN's AscendC compiler; needs a CANN toolkit)")
    import subprocess

    files = projects["models/deepseek_v4_flash/hc_post.dsl:hc_post"]
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    proc = subprocess.run(
        [compiler, "-x", "asc", "--npu-arch=dav-2201", "-c", "hc_post.asc", "-o", "hc_post.o"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_shim_holds_declarations_only():
    """The tikicpulib and ACL stand-ins declare; they must not define a function body."""
    headers = sorted(TIKICPULIB_SHIM.glob("*.h")) + sorted(ACL_SHIM.rglob("*.h"))
    assert len(headers) >= 6, headers
    for header in headers:
        text = header.read_text(encoding="utf-8")
        assert not re.search(r"\)\s*(const\s*)?\{", text), f"{header.name} defines a function body"
