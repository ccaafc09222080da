"""Misuse of the host level of distributed programs (SPEC §8): each is a ParserError subclass with
a message that says what to do, located at the user's line (the `# MARK-...` comment)."""

import pytest
from marker_lines import assert_at

import pypto.language as pl
import pypto.language.distributed as pld
from pypto.core.errors import InvalidOperationError, ParserSyntaxError, ParserTypeError

T = pl.Tensor[[16, 64], pl.FP32]
W = pl.Tensor[[2, 16, 64], pl.FP32]


def test_device_on_a_kernel_is_rejected():
    with pytest.raises(ParserSyntaxError) as ei:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: T, y: pl.Out[T]) -> T:
                t = pl.load(x, [0, 0], [16, 64])
                y = pl.store(t, [0, 0], y)
                return y

            @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
            def host(self, xs: W, ys: pl.Out[W]) -> W:
                for r in pl.range(pld.world_size()):
                    self.k(xs[r], ys[r], device=r)  # MARK-device-kernel
                return ys
    assert ei.value.message == (
        "device= dispatches a chip orchestration function, but 'k' is an InCore kernel; call it from a chip "
        "orchestration function (@pl.jit, or @pl.function(type=pl.FunctionType.Orchestration)) and dispatch "
        "that one")
    assert_at(ei.value, __file__, "MARK-device-kernel")


def test_device_on_a_jit_incore_kernel_is_rejected():
    @pl.jit.incore
    def kern(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        t = pl.load(x, [0, 0], [16, 64])
        y = pl.store(t, [0, 0], y)
        return y

    @pl.jit.host
    def host(xs: W, ys: pl.Out[W]):
        for r in pl.range(pld.world_size()):
            kern(xs[r], ys[r], device=r)  # MARK-jit-device-kernel
        return ys

    with pytest.raises(ParserSyntaxError) as ei:
        host.specialize()
    assert "but 'kern' is an InCore kernel" in ei.value.message
    assert_at(ei.value, __file__, "MARK-jit-device-kernel")


@pl.program
class Chip:
    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, x: T, y: pl.Out[T]) -> T:
        with pl.at(level=pl.Level.CORE_GROUP):
            y[:] = pl.muls(x, 2.0)
        return y


def _host_program(body: str) -> str:
    """A program text with `Chip.chip` and a host orchestrator of body `body` (indented 8)."""
    chip = Chip.as_python().split("class Chip:\n", 1)[1]
    return (f"import pypto.language as pl\nimport pypto.language.distributed as pld\n\n@pl.program\nclass P:\n"
            f"{chip}\n    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)\n"
            f"    def host(self, xs: pl.Tensor[[2, 16, 64], pl.FP32], ys: pl.Out[pl.Tensor[[2, 16, 64], pl.FP32]]):\n"
            f"{body}")


def _parse_error(body: str, cls: type) -> tuple[Exception, str]:
    text = _host_program(body)
    with pytest.raises(cls) as ei:
        pl.parse(text)
    return ei.value, text


def _line(text: str, needle: str) -> int:
    return next(i + 1 for i, ln in enumerate(text.splitlines()) if needle in ln)


@pytest.mark.parametrize("loop", ["pl.range(1, pld.world_size())", "pl.range(0, pld.world_size(), 2)",
                                  "pl.range(2)", "pl.range(0, pld.world_size() - 1)"])
def test_dispatch_loop_must_cover_every_rank(loop):
    err, text = _parse_error(f"        for r in {loop}:\n            self.chip(xs[r], ys[r], device=r)\n", ParserSyntaxError)
    assert err.message.startswith("a dispatch loop must cover exactly the ranks [0, N), N = pld.world_size() (or the "
                                  "pl.dynamic rank count of a world-shaped parameter), with step 1; this one is pl.range(")
    assert err.message.endswith("write for r in pl.range(pld.world_size()): ...")
    assert err.span.begin_line == _line(text, "for r in")


def test_device_must_be_the_rank_loop_variable():
    err, text = _parse_error("        self.chip(xs[0], ys[0], device=0)\n", ParserSyntaxError)
    assert err.message == ("device= of 'chip' must be the variable of the enclosing rank loop, so that every rank "
                           "gets the dispatch (for r in pl.range(pld.world_size()): ... chip(..., device=r))")
    assert err.span.begin_line == _line(text, "device=0")


def test_world_size_bound_to_a_name_is_a_rank_loop():
    text = _host_program("        n = pld.world_size()\n        for r in pl.range(n):\n"
                         "            self.chip(xs[r], ys[r], device=r)\n")
    assert pl.parse(text).get_function("host") is not None


def test_chip_orchestration_called_from_the_host_needs_device():
    err, text = _parse_error("        for r in pl.range(pld.world_size()):\n            self.chip(xs[r], ys[r])\n",
                             ParserSyntaxError)
    assert err.message == ("'chip' is a chip orchestration function: a HOST orchestrator dispatches it to one rank "
                           "with device=r inside the rank loop (for r in pl.range(pld.world_size()): ... "
                           "chip(..., device=r))")
    assert err.span.begin_line == _line(text, "self.chip(xs[r], ys[r])")


def test_tile_op_in_a_host_function_is_rejected():
    err, text = _parse_error("        t = pl.tile.create([16, 64], dtype=pl.FP32)\n", InvalidOperationError)
    assert err.message == ("'pl.tile.create' cannot run in HOST function 'host': it runs on a chip; call it from a "
                           "kernel that a chip orchestration function dispatches with device=r")
    assert err.span.begin_line == _line(text, "pl.tile.create")


def test_tensor_compute_in_a_host_function_is_rejected():
    err, text = _parse_error("        for r in pl.range(pld.world_size()):\n            y = pl.add(xs[r], xs[r])\n",
                             InvalidOperationError)
    assert err.message.startswith("'pl.tensor.add' cannot run in HOST function 'host': it runs on a chip")
    assert err.span.begin_line == _line(text, "pl.add(")


def test_slicing_a_tensor_in_a_host_function_is_rejected():
    err, text = _parse_error("        for r in pl.range(pld.world_size()):\n"
                             "            self.chip(xs[r, 0:16], ys[r], device=r)\n", ParserTypeError)
    assert err.message.startswith("in a HOST orchestrator a tensor is indexed by rank only: x[r] selects rank r's part")
    assert err.span.begin_line == _line(text, "xs[r, 0:16]")


def test_plain_tensor_for_a_distributed_parameter_is_rejected():
    @pl.jit
    def chip_w(x: pl.Tensor, data: pl.InOut[pld.DistributedTensor]):
        return

    @pl.jit.host
    def host(xs: W, ys: pl.Out[W]):
        for r in pl.range(pld.world_size()):
            chip_w(xs[r], ys[r], device=r)  # MARK-plain-window
        return ys

    with pytest.raises(ParserTypeError) as ei:
        host.specialize()
    assert ei.value.message.startswith("argument 'data' of 'chip_w' must be a window-bound pld.DistributedTensor")
    assert ei.value.message.endswith("bind it to a window on the host (pld.window) and pass it down")
    assert_at(ei.value, __file__, "MARK-plain-window")


def test_world_size_in_a_chip_orchestration_function_is_rejected():
    with pytest.raises(InvalidOperationError) as ei:
        @pl.function(type=pl.FunctionType.Orchestration)
        def chip(x: T) -> T:
            n = pld.world_size()  # MARK-world-chip
            return x
    assert ei.value.message == (
        "'pld.world_size' is a host op: only a HOST orchestrator (@pl.jit.host, or "
        "@pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)) may call it")
    assert_at(ei.value, __file__, "MARK-world-chip")


def test_world_size_in_a_kernel_is_rejected():
    with pytest.raises(InvalidOperationError) as ei:
        @pl.function(type=pl.FunctionType.InCore)
        def k(x: T) -> T:
            n = pld.world_size()  # MARK-world-kernel
            return x
    assert ei.value.message.startswith("'pld.world_size' is a host op: only a HOST orchestrator")
    assert_at(ei.value, __file__, "MARK-world-kernel")


def test_window_allocation_outside_the_host_is_rejected():
    with pytest.raises(InvalidOperationError) as ei:
        @pl.function(type=pl.FunctionType.Orchestration)
        def chip(x: T) -> T:
            b = pld.alloc_window_buffer(1024)  # MARK-alloc-chip
            return x
    assert ei.value.message.startswith("'pld.alloc_window_buffer' is a host op: only a HOST orchestrator")
    assert_at(ei.value, __file__, "MARK-alloc-chip")


def test_device_outside_a_host_function_is_rejected():
    with pytest.raises(ParserSyntaxError) as ei:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def inner(self, x: T, y: pl.Out[T]) -> T:
                return y

            @pl.function(type=pl.FunctionType.Orchestration)
            def outer(self, x: T, y: pl.Out[T]) -> T:
                y = self.inner(x, y, device=0)  # MARK-device-chip
                return y
    assert ei.value.message.startswith("device= dispatches a chip orchestration function to a rank, which only a HOST "
                                       "orchestrator does")
    assert ei.value.message.endswith("Orchestration function 'outer' is not one")
    assert_at(ei.value, __file__, "MARK-device-chip")


def test_sub_worker_takes_no_device():
    with pytest.raises(ParserSyntaxError) as ei:
        @pl.program
        class P:
            @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
            def cb(self, xs: W):
                ...

            @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
            def host(self, xs: W) -> W:
                for r in pl.range(pld.world_size()):
                    self.cb(xs, device=r)  # MARK-sub-device
                return xs
    assert ei.value.message == ("'cb' is a HOST SubWorker (a Python callback on the host): call it without device=")
    assert_at(ei.value, __file__, "MARK-sub-device")


def test_sub_worker_called_from_a_chip_function_is_rejected():
    with pytest.raises(ParserSyntaxError) as ei:
        @pl.program
        class P:
            @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
            def cb(self, x: T):
                ...

            @pl.function(type=pl.FunctionType.Orchestration)
            def chip(self, x: T) -> T:
                self.cb(x)  # MARK-sub-chip
                return x
    assert ei.value.message == "'cb' is a HOST SubWorker: only a HOST orchestrator can call it"
    assert_at(ei.value, __file__, "MARK-sub-chip")


def test_window_needs_a_dtype_and_a_buffer():
    err, text = _parse_error("        b = pld.alloc_window_buffer(1024)\n        d = pld.window(b, [1, 256])\n",
                             ParserTypeError)
    assert "pld.window" in err.message and "attribute 'dtype' must be a data type" in err.message
    assert err.span.begin_line == _line(text, "pld.window(")
    err, text = _parse_error("        d = pld.window(xs, [1, 256], dtype=pl.FP32)\n", ParserTypeError)
    assert "argument 'buf' must be a window buffer (pld.alloc_window_buffer(...)), got Tensor" in err.message


def test_alloc_window_buffer_of_a_shape_needs_a_dtype():
    err, text = _parse_error("        b = pld.alloc_window_buffer([4, 256])\n", ParserTypeError)
    assert "give its element type too, pld.alloc_window_buffer(shape, dtype=pl.FP32)" in err.message
    assert err.span.begin_line == _line(text, "alloc_window_buffer")


def test_a_dispatch_has_no_value_on_the_host():
    err, text = _parse_error("        for r in pl.range(pld.world_size()):\n"
                             "            y = self.chip(xs[r], ys[r], device=r)\n", ParserSyntaxError)
    assert err.message == ("a dispatch runs 'chip' on rank r asynchronously and gives the host no value: write it "
                           "as a statement, chip(..., device=r); its Out/InOut arguments (e.g. ys[r]) receive the "
                           "results")
    assert err.span.begin_line == _line(text, "y = self.chip")


WINDOW_HINT = ("pld.allreduce: argument 'src' must be a window-bound pld.DistributedTensor, got Tensor (a plain "
               "Tensor lives only in this rank's memory: bind it to a window with pld.window(...) on the host and "
               "declare the parameter pld.DistributedTensor[[...], dtype])")


@pytest.mark.parametrize("arg", ["xs", "ys"])
def test_host_allreduce_of_a_plain_parameter_reports_the_window_first(arg):
    # A fresh user's mistake: an ordinary input parameter `xs` used to get "cannot write input
    # parameter 'xs'" first, and declaring it pl.Out only led to this error; it is the real one.
    @pl.jit.host
    def host(xs: W, ys: pl.Out[W]):
        pld.allreduce(xs if arg == "xs" else ys)  # MARK-plain-allreduce
        return ys

    with pytest.raises(ParserTypeError) as ei:
        host.specialize()
    assert ei.value.message == WINDOW_HINT
    assert_at(ei.value, __file__, "MARK-plain-allreduce")


def test_kernel_allreduce_of_a_window_bound_input_is_rejected_as_a_write():
    # The write check still applies to window-bound tensors: allreduce writes its `src`.
    with pytest.raises(InvalidOperationError) as ei:
        @pl.function(type=pl.FunctionType.InCore)
        def k(data: pld.DistributedTensor[[16, 64], pl.FP32],
              sig: pl.InOut[pld.DistributedTensor[[2, 1], pl.INT32]]) -> pld.DistributedTensor[[16, 64], pl.FP32]:
            data = pld.allreduce(data, sig)  # MARK-window-input-allreduce
            return data
    assert ei.value.message == ("cannot write input parameter 'data' (pld.allreduce writes it); declare it "
                                "pl.Out[...] or pl.InOut[...] to write it")
    assert_at(ei.value, __file__, "MARK-window-input-allreduce")
