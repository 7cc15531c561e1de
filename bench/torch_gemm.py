#!/usr/bin/env python3
"""PyTorch's side of `mixt-bench gemm --device cuda --torch`: torch.mm and torch._scaled_mm on
the same shapes and dtypes, timed the same way (fresh normal inputs per shape, input sets
rotated over --rotate-mb, CUDA events, one warm-up, calls per run enough for ~5 ms, median of
--runs). Writes {"torch": version, "rows": [{"dtype", "shape", "tflops", "median_us"}]} to
--json. mixt never depends on PyTorch; this script is only run when `import torch` works."""
import argparse
import json
import statistics

import torch


def parse_shapes(text):
    out = []
    for w in text.split(","):
        m, n, k = (int(x) for x in w.split("x"))
        out.append((m, n, k))
    return out


def time_cuda(fn, runs):
    fn(0)
    torch.cuda.synchronize()

    def measure(calls):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(calls):
            fn(i)
        stop.record()
        stop.synchronize()
        return start.elapsed_time(stop) / 1e3

    calls = 1
    while calls < 4096 and measure(calls) < 5e-3:
        calls *= 2
    return statistics.median(measure(calls) / calls for _ in range(runs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtypes", required=True)
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--rotate-mb", type=int, default=128)
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    dev = torch.device("cuda")
    storage = {"fp32": torch.float32, "f32": torch.float32, "tf32": torch.float32, "fp64": torch.float64,
               "f64": torch.float64, "fp16": torch.float16, "f16": torch.float16, "bf16": torch.bfloat16,
               "fp8": torch.float8_e4m3fn, "fp8-fast": torch.float8_e4m3fn}
    rows = []
    for name in args.dtypes.split(","):
        dt = storage[name]
        fp8 = name.startswith("fp8")
        torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
        for m, n, k in parse_shapes(args.shapes):
            if fp8 and (k % 16 or n % 16):
                continue
            esize = torch.empty((), dtype=dt).element_size()
            sets = max(1, min(32, (args.rotate_mb << 20) // max(1, (m * k + k * n) * esize)))
            g = torch.Generator(device=dev).manual_seed(m * 31 + n * 7 + k)
            ins = []
            for _ in range(sets):
                a = torch.randn(m, k, device=dev, generator=g).to(dt)
                w = torch.randn(n, k, device=dev, generator=g).to(dt)
                ins.append((a, w.t()))
            one = torch.ones((), device=dev, dtype=torch.float32)
            if fp8:
                fast = name == "fp8-fast"

                def fn(i, ins=ins, one=one, fast=fast):
                    a, b = ins[i % len(ins)]
                    return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                            use_fast_accum=fast)
            else:

                def fn(i, ins=ins):
                    a, b = ins[i % len(ins)]
                    return torch.mm(a, b)

            t = time_cuda(fn, args.runs)
            rows.append({"dtype": name, "shape": f"{m}x{n}x{k}", "tflops": 2.0 * m * n * k / t / 1e12,
                         "median_us": t * 1e6})
            print(f"torch {name:8s} {m}x{n}x{k}: {rows[-1]['tflops']:.1f} TFLOP/s", flush=True)
            del ins
            torch.cuda.empty_cache()
    torch.backends.cuda.matmul.allow_tf32 = False
    with open(args.json, "w") as f:
        json.dump({"torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
