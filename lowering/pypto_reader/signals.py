"""Cross-rank signals, remote data and barriers inside a kernel scope.

- ``pld.system.notify(target, peer, offsets, value, op=AtomicAdd|Set)`` -> a notify of
  ``target[offsets]`` on rank ``peer`` (the DSL's ``notify sig[i] @ peer += v`` / ``= v``);
- ``pld.system.wait(signal, offsets, expected, cmp=Ge|Eq)`` -> a blocking wait with its
  expected expression kept symbolic (``moe_epoch * N_LOCAL``), as the protocol rules need;
- ``pld.tile.remote_store`` / ``pld.tensor.remote_store`` / ``pld.tensor.put`` -> a remote
  write (atomic with ``atomic=AtomicType.Add``) into the window on ``peer``;
- ``pl.system.syncall(mode=)`` -> a hard or soft barrier of the task's blocks.

Every op records the enclosing loops and conditions, so the signal counting of the protocol
rules (notifies per epoch = blocks x trips x conditions) works on it.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from lowering import body as ir_body
from lowering.ir import BarrierOp, SignalOp
from lowering.pypto_reader.ops import OpTable, tile_type
from lowering.pypto_reader.values import UNKNOWN, IntVal, PlRef, PyVal, TensorVal, Val
from lowering.symbolic import Const, Expr, Sym

if TYPE_CHECKING:
    from lowering.pypto_reader.kernel import KernelReader

#: The cross-rank signal and remote-memory ops of this module.
SIGNAL_OPS = OpTable()
op = SIGNAL_OPS.op

COLLECTIVES = frozenset(
    {
        "pld.tensor.allreduce", "pld.tensor.barrier", "pld.tensor.broadcast", "pld.tensor.allgather",
        "pld.tensor.reduce_scatter", "pld.tensor.all_to_all", "pld.tensor.all_to_all_v",
    }
)  # fmt: skip


def _enum(k: KernelReader, node: ast.expr | None) -> str | None:
    if node is None:
        return None
    v = k.eval(node)
    return v.path.rsplit(".", 1)[-1] if isinstance(v, PlRef) else None


def _offsets(k: KernelReader, node: ast.expr | None, what: str) -> tuple[Expr, ...] | None:
    if node is None:
        return None
    out = k.int_list(node)
    if out is None:
        k.notes.not_modelled(
            k.span(node),
            f"{what} the reader cannot evaluate",
            "the signal cell is unknown: counting rules treat it as data-dependent",
        )
    return out


@op("pld.system.notify", params=("target", "peer", "offsets", "value", "op"))
def _notify(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    target = k.tensor_of(b["target"]) if "target" in b else None
    peer = k.int_expr(k.eval(b["peer"])) if "peer" in b else None
    value = k.int_expr(k.eval(b["value"])) if "value" in b else Const(1)
    index = _offsets(k, b.get("offsets"), "notify offsets")
    kind = _enum(k, b.get("op"))
    if target is None or peer is None or value is None or index is None:
        k.notes.not_modelled(
            k.span(node),
            "a notify whose target, peer or value the reader cannot evaluate",
            "it is not counted: handshake and protocol findings about this signal may be missing",
        )
        return PyVal(None)
    opname = "set" if kind == "Set" else "add"
    k.access.signal_tensors.add(target.root)
    k.access.signals.append(
        SignalOp(
            "notify", target.root, index, k.body.loop_tuple(), k.body.cond_tuple(), k.span(node), k.body.next_order(),
            peer=peer, op=opname, value=value,
        )
    )  # fmt: skip
    k.body.emit(ir_body.NotifyS(target.root, index, peer, opname, value, k.span(node)))
    return PyVal(None)


@op("pld.system.wait", "pld.system.defer_wait", params=("signal", "offsets", "expected", "cmp"))
def _wait(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    signal = k.tensor_of(b["signal"]) if "signal" in b else None
    expected = k.int_expr(k.eval(b["expected"])) if "expected" in b else None
    index = _offsets(k, b.get("offsets"), "wait offsets")
    cmp = "eq" if _enum(k, b.get("cmp")) == "Eq" else "ge"
    if signal is None or expected is None or index is None:
        k.notes.not_modelled(
            k.span(node),
            "a wait whose signal, cell or expected value the reader cannot evaluate",
            "it is not modelled: handshake findings about it are missing",
        )
        return PyVal(None)
    if name.endswith("defer_wait"):
        k.notes.not_modelled(
            k.span(node),
            "defer_wait (the task releases its core and completes when the condition holds)",
            "it is read as a blocking wait, so findings about a core held while spinning on it may be "
            "false positives",
        )
    k.access.signal_tensors.add(signal.root)
    k.access.signals.append(
        SignalOp(
            "wait", signal.root, index, k.body.loop_tuple(), k.body.cond_tuple(), k.span(node), k.body.next_order(),
            cmp=cmp, expected=expected,
        )
    )  # fmt: skip
    k.body.emit(ir_body.WaitS(signal.root, index, cmp, expected, k.span(node)))
    return PyVal(None)


@op("pld.tile.remote_store", "pld.tensor.remote_store", "pld.remote_store")
def _remote_store(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    first = "src_tile" if name.startswith("pld.tile") else "src"
    b = k.arguments(node, [first, "target", "peer", "offsets", "atomic"])
    src_node = b.get(first) or b.get("src") or b.get("src_tile")
    target = k.tensor_of(b["target"]) if "target" in b else None
    peer = k.int_expr(k.eval(b["peer"])) if "peer" in b else None
    offsets = k.int_list(b.get("offsets"))
    if src_node is None or target is None or peer is None:
        return k.opaque_op(name, node, "a remote store whose target or peer the reader cannot evaluate")
    value = k.value(k.eval(src_node))
    region = k.access.region_at(target, offsets, tile_type(value))
    return _remote_write(k, target, region, peer, value, b, node)


@op("pld.tensor.put", "pld.tile.put")
def _put(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    b = k.arguments(node, ["dst", "peer", "src", "dst_offsets", "src_offsets", "shape", "atomic"])
    dst = k.tensor_of(b["dst"]) if "dst" in b else None
    peer = k.int_expr(k.eval(b["peer"])) if "peer" in b else None
    if dst is None or peer is None or "src" not in b:
        return k.opaque_op(name, node, "a put whose destination or peer the reader cannot evaluate")
    shape = k.int_list(b.get("shape"))
    src = k.tensor_of(b["src"])
    if src is not None:
        src_region = k.access.region_at(src, k.int_list(b.get("src_offsets")), shape)
        k.access.record(src, src_region, "read", node)
        value: ir_body.Value = ir_body.LoadV(
            src.root, k.access.root_region(src, src_region), k.access.region_type(src, src_region)
        )
    else:
        value = k.value(k.eval(b["src"]))
    dst_region = k.access.region_at(dst, k.int_list(b.get("dst_offsets")), shape)
    return _remote_write(k, dst, dst_region, peer, value, b, node)


def _remote_write(
    k: KernelReader,
    window: TensorVal,
    region: tuple[ir_body.Range, ...],
    peer: Expr,
    value: ir_body.Value,
    b: dict[str, ast.expr],
    node: ast.Call,
) -> Val:
    """Write ``value`` into ``window[region]`` on rank ``peer`` (atomic with ``atomic=Add``)."""
    atomic = _enum(k, b.get("atomic")) == "Add"
    k.access.window_tensors.add(window.root)
    k.access.record(window, region, "atomic" if atomic else "write", node, peer=peer)
    k.body.emit(
        ir_body.RemoteStoreS(
            window.root, k.access.root_region(window, region), peer, value, atomic, k.span(node)
        )
    )
    return PyVal(None)


@op("pld.tensor.get", "pld.tile.get", "pld.tile.remote_load", "pld.remote_load")
def _remote_read(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    if name.endswith("remote_load"):
        b = k.arguments(node, ["target", "peer", "offsets", "shape", "valid_shape"])
        win = k.tensor_of(b["target"]) if "target" in b else None
        shape = k.int_list(b.get("shape"))
        if win is None:
            return k.opaque_op(name, node)
        region = k.access.region_at(win, k.int_list(b.get("offsets")), shape)
        peer = k.int_expr(k.eval(b["peer"])) if "peer" in b else None
        k.access.record(win, region, "read", node, peer=peer)
        return k.access.load_value(win, region)
    b = k.arguments(node, ["dst", "peer", "src", "dst_offsets", "src_offsets", "shape"])
    dst, src = (k.tensor_of(b[n]) if n in b else None for n in ("dst", "src"))
    shape = k.int_list(b.get("shape"))
    peer = k.int_expr(k.eval(b["peer"])) if "peer" in b else None
    if src is not None:
        k.access.record(
            src, k.access.region_at(src, k.int_list(b.get("src_offsets")), shape), "read", node, peer=peer
        )
    if dst is not None:
        region = k.access.region_at(dst, k.int_list(b.get("dst_offsets")), shape)
        k.access.record(dst, region, "write", node)
    return PyVal(None)


@op("pl.system.syncall")
def _syncall(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    mode = k.static(k.eval(b["mode"])) if "mode" in b else "hard"
    soft = mode == "soft"
    k.access.barriers.append(
        BarrierOp(soft, k.body.loop_tuple(), k.body.cond_tuple(), k.span(node), k.body.next_order())
    )
    k.body.emit(ir_body.BarrierS(soft, k.span(node)))
    return PyVal(None)


@op("pld.system.rank", "pld.rank")
def _rank(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    return IntVal(Sym("rank", "rank"))


@op("pld.system.nranks", "pld.nranks", "pld.world_size", "pld.system.world_size")
def _nranks(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    return IntVal(Sym("nranks", "nranks"))


def collective(k: KernelReader, path: str, node: ast.Call) -> Val:
    k.notes.not_modelled(
        k.span(node),
        f"the collective {path} (it expands into notify/wait pairs with self-clearing signals)",
        "it is read as opaque data movement: handshake findings that involve it are missing, and it "
        "orders nothing in the task graph",
    )
    for arg in node.args:
        t = k.tensor_of(arg)
        if t is not None:
            k.access.record(t, k.access.region_at(t, None, None), "read", node)
    return UNKNOWN
