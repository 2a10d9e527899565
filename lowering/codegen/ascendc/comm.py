"""Cross-rank ops on GM window pointers, for the AIV writer (``lowering.codegen.ascendc.aiv``).

A ``window`` or ``signal`` tensor reaches a kernel as a table of ``nranks`` GM base
addresses (``uint64_t``), one per rank, as a communicator's symmetric window registration
provides them; the kernel's own copy is entry ``rank``. Then:

- ``remote_store t[region] @ peer = v`` is the ordinary store path (outQueue, DataCopyPad)
  aimed at the peer's base address;
- ``notify sig[i] @ peer += v`` first drains this core's MTE3 queue
  (``PipeBarrier<PIPE_MTE3>``: every earlier store has completed), then writes ``v`` to the
  peer's cell with ``SetAtomicAdd<int32_t>()`` around a 4-byte DataCopyPad (``= v``: the
  same without the atomic);
- ``wait sig[i] >= e`` spins on the local cell: ``DataCacheCleanAndInvalid`` of its cache
  line, then ``GetValue``, until the comparison holds.

That data stored before a notify is visible to the peer once the notify is, relies on the
interconnect completing this core's MTE3 writes in order; only a device run checks it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lowering import body as ir_body
from lowering.codegen.ascendc import names
from lowering.codegen.ascendc.cxx import cxx_type
from lowering.codegen.ascendc.diagnostics import refuse
from lowering.codegen.ascendc.part import WriterPart
from lowering.symbolic import Const, Expr

if TYPE_CHECKING:
    pass

_WAIT_CMP = {"ge": ">=", "eq": "=="}


def peers(tensor: str) -> str:
    """The GlobalTensor<uint64_t> of a window's per-rank base addresses."""
    return "w" + names.tensor(tensor)[1:]


class CrossRankComm(WriterPart):
    """Stores to a peer's window, ``notify`` of a peer's signal cell, ``wait`` on a local one."""

    def peer_tensor(self, tensor: str, peer: Expr) -> str:
        """A GlobalTensor over ``tensor`` on rank ``peer`` (declared here, used once)."""
        kind = self.w.graph.tensors[tensor].kind
        if kind not in ("window", "signal"):
            raise refuse("A705", f"{tensor} is a {kind}, not a window: it has no peer copies", self.w.span)
        self.w.gm(tensor)
        dtype = cxx_type(self.w.graph.tensors[tensor].dtype)
        var = self.text.fresh("remote")
        self.text.emit(f"AscendC::GlobalTensor<{dtype}> {var};")
        self.text.emit(
            f"{var}.SetGlobalBuffer(reinterpret_cast<__gm__ {dtype}*>({peers(tensor)}.GetValue({self.w.int(peer)})));"
        )
        return var

    def remote_store(self, s: ir_body.RemoteStoreS) -> None:
        self.w.transfers.put(s.tensor, s.region, s.value, s.atomic, self.peer_tensor(s.tensor, s.peer))

    def cell(self, signal: str, index: tuple[Expr, ...]) -> str:
        region = tuple(ir_body.Range(i, i + 1, Const(1), point=True) for i in index)
        offset, _ = self.w.row_major(signal, region, self.w.span)
        return self.w.int(offset)

    def notify(self, s: ir_body.NotifyS) -> None:
        if self.w.graph.tensors[s.signal].dtype != "i32":
            raise refuse("A702", f"signal {s.signal} must be i32", s.span)
        gm = self.peer_tensor(s.signal, s.peer)
        at = self.cell(s.signal, s.index)
        out = self.ub.queue_tile("outQueue", 1, 8, "i32")
        self.text.emit("AscendC::PipeBarrier<PIPE_MTE3>();  // every earlier store has landed")
        self.text.emit(f"AscendC::Duplicate({out.base}, static_cast<int32_t>({self.w.int(s.value)}), 8);")
        self.text.emit(f"outQueue.EnQue({out.base});")
        self.text.emit(f"{out.base} = outQueue.DeQue<int32_t>();")
        if s.op == "add":
            self.text.emit("AscendC::SetAtomicAdd<int32_t>();")
        self.text.emit(
            f"AscendC::DataCopyPad({gm}[{at}], {out.base}, AscendC::DataCopyExtParams{{1, 4, 0, 0, 0}});"
        )
        if s.op == "add":
            self.text.emit("AscendC::SetAtomicNone();")
        self.text.emit(f"outQueue.FreeTensor({out.base});")
        self.ub.outq.give()

    def wait(self, s: ir_body.WaitS) -> None:
        if self.w.graph.tensors[s.signal].kind != "signal":
            raise refuse("A705", f"wait on {s.signal}, which is not a signal", s.span)
        gm = self.w.gm(s.signal)
        at = self.cell(s.signal, s.index)
        expected = self.w.int(s.expected)
        self.text.emit("while (true) {  // spin on the local cell; each read refetches its cache line")
        self.text.emit(
            "    AscendC::DataCacheCleanAndInvalid<int32_t, AscendC::CacheLine::SINGLE_CACHE_LINE, "
            f"AscendC::DcciDst::CACHELINE_OUT>({gm}[{at}]);"
        )
        self.text.emit(f"    if ({gm}.GetValue({at}) {_WAIT_CMP[s.cmp]} {expected}) {{")
        self.text.emit("        break;")
        self.text.emit("    }")
        self.text.emit("}")


__all__ = ["CrossRankComm", "peers"]
