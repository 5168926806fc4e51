"""What the eager path's first-use kernel check costs (prints numbers; not a test). Needs a GPU.

    python benches/bench_first_use.py [--size 4096] [--calls 200]

A region ``y = x * 2`` on an N x N fp32 input, lowered to a Triton kernel (one program per row).
The kernel is launched once with the check off first, so Triton's JIT compile is out of every
figure. Then, with the check on:

1. the first call's added cost: the checked first call minus an unchecked call (the check runs
   the region body on copies and compares);
   The first figure includes loading torch's own kernels the check uses (CUDA loads modules
   lazily), the second is the check alone.
2. a later call's added cost: the median of later calls with the check on minus the median with
   it off (the goal: not measurable beside the launch).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import triton
import triton.language as tl

import tta
from tta.runtime import first_use


@triton.jit
def _scale(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BLOCK)
    m = c < n_cols
    tl.store(out_ptr + row * n_cols + c, tl.load(x_ptr + row * n_cols + c, mask=m) * 2.0, mask=m)


def _launch(x, out, *, BLOCK: int = 4096):
    n = x.shape[-1]
    assert n <= BLOCK
    _scale[(x.numel() // n,)](x, out, n, BLOCK=BLOCK)


class Scale(torch.nn.Module):
    def __init__(self, plugin):
        super().__init__()
        self.plugin = plugin

    def forward(self, x):
        with tta.lower_as(impl=self.plugin):
            y = x * 2
        return y


def _timed(fn, x) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn(x)
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--calls", type=int, default=200)
    a = ap.parse_args()
    n = a.size
    plugin = tta.custom_plugin(kernel=tta.triton(_launch, configs=[{"BLOCK": triton.next_power_of_2(n)}]), name="bench_first_use")
    x = torch.randn(n, n, device="cuda")
    ep = torch.export.export(Scale(plugin), (x,), dynamic_shapes=({0: torch.export.Dim("b", max=2 * n)},))
    off = tta.rewrite(ep, check_kernels=False).program.module()
    for _ in range(3):
        off(x)  # Triton's JIT compile and the allocator's warm-up, out of every figure
    unchecked = statistics.median(_timed(off, x) for _ in range(20))
    on = tta.rewrite(ep, check_kernels=True).program.module()  # the op's switch: on, nothing passed yet
    first = _timed(on, x)
    torch.testing.assert_close(on(x), x * 2)
    first_use.reset()  # forget the pass: the same first call, torch's own kernels now loaded
    again = _timed(on, x)
    later_on = statistics.median(_timed(on, x) for _ in range(a.calls))
    tta.rewrite(ep, check_kernels=False)  # the same op, its switch now off
    later_off = statistics.median(_timed(on, x) for _ in range(a.calls))
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}")
    print(f"region y = x * 2 on {n}x{n} fp32; an unchecked call takes {unchecked * 1e3:.3f} ms")
    print(f"first call with the check: {first * 1e3:.3f} ms, added {(first - unchecked) * 1e3:.3f} ms")
    print(f"first call again, torch's kernels loaded: {again * 1e3:.3f} ms, added {(again - unchecked) * 1e3:.3f} ms")
    print(
        f"later call: {later_on * 1e6:.1f} us with the check on, {later_off * 1e6:.1f} us off, "
        f"added {(later_on - later_off) * 1e6:+.1f} us ({a.calls} calls each, medians)"
    )


if __name__ == "__main__":
    main()
