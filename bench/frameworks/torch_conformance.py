"""PyTorch features as users use them, each in its own process, under PyTorch's own allocator
and under rmm-rs (scripts/gpu-torch-conformance.sh runs it on a GPU machine).

    python3 bench/frameworks/torch_conformance.py [--configs LIST] [--cases LIST] [--json FILE]
    python3 bench/frameworks/torch_conformance.py --bench [--configs LIST]  (torch.empty pairs)
    python3 bench/frameworks/torch_conformance.py --run CASE --config CONFIG   (one child)

A configuration is `native` (PyTorch's caching allocator), `native-expandable`
(expandable_segments:True), `rmm-default` (rmm_rs.use_for_torch() with nothing configured),
`rmm-pool` (statistics/pool), `rmm-expandable` (statistics/expandable) or `rmm-shim` (the
pluggable-allocator fallback). A case passes when its checks hold and its process exits 0;
`n/a` when what it needs is missing (a second GPU, transformers). Prints a Markdown table.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

CONFIGS = {
    "native": {},
    "native-expandable": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
    "rmm-default": {},
    "rmm-pool": {"RMM_ALLOC_CONF": "statistics/pool"},
    "rmm-expandable": {"RMM_ALLOC_CONF": "statistics/expandable"},
    "rmm-shim": {"RMM_RS_TORCH_BACKEND": "shim"},
}


class NotApplicable(Exception):
    pass


def setup(config):
    import torch

    if config.startswith("rmm"):
        import rmm_rs

        rmm_rs.use_for_torch()
    return torch


# ---- cases: each returns None or raises ---------------------------------------------------


def case_eager_training(torch):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(512, 256, device="cuda")
    y = torch.randint(0, 10, (512,), device="cuda")
    first = None
    for _ in range(50):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        first = first if first is not None else loss.item()
    assert loss.item() < first, (first, loss.item())


def case_memory_stats(torch):
    torch.cuda.init()
    base = torch.cuda.memory_allocated()
    x = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    assert torch.cuda.memory_allocated() - base >= 64 << 20, torch.cuda.memory_allocated()
    assert torch.cuda.max_memory_allocated() >= torch.cuda.memory_allocated()
    assert torch.cuda.memory_reserved() >= torch.cuda.memory_allocated(), (torch.cuda.memory_reserved(), torch.cuda.memory_allocated())
    stats = torch.cuda.memory_stats()
    assert stats["allocation.all.current"] >= 1 and stats["allocated_bytes.all.peak"] >= 64 << 20, stats
    del x
    assert torch.cuda.memory_allocated() == base, (torch.cuda.memory_allocated(), base)
    torch.cuda.reset_peak_memory_stats()
    assert torch.cuda.max_memory_allocated() == base, torch.cuda.max_memory_allocated()
    y = torch.empty(8 << 20, dtype=torch.uint8, device="cuda")
    assert torch.cuda.max_memory_allocated() == base + (8 << 20), torch.cuda.max_memory_allocated()
    del y
    torch.cuda.memory_summary()


def case_empty_cache(torch):
    xs = [torch.empty(32 << 20, dtype=torch.uint8, device="cuda") for _ in range(8)]
    held = torch.cuda.memory_reserved()
    del xs
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    assert torch.cuda.memory_reserved() < held, (torch.cuda.memory_reserved(), held)


def case_cudnn_benchmark(torch):
    torch.backends.cudnn.benchmark = True
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(32, 8, 3)).cuda()
    x = torch.randn(16, 3, 64, 64, device="cuda")
    for _ in range(3):
        model(x).sum().backward()
    torch.cuda.synchronize()


def case_cuda_graph(torch):
    model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128)).cuda()
    static_in = torch.randn(64, 128, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            model(static_in)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = model(static_in) * 2
    for _ in range(3):
        new = torch.randn(64, 128, device="cuda")
        static_in.copy_(new)
        graph.replay()
        expected = model(new) * 2
        torch.testing.assert_close(static_out, expected)
    # Eager allocations while the graph is alive never land on the graph's memory.
    keep = [torch.full((1 << 16,), 7.0, device="cuda") for _ in range(16)]
    graph.replay()
    torch.cuda.synchronize()
    assert all(bool((k == 7.0).all()) for k in keep)
    del graph, static_out
    torch.cuda.synchronize()


def case_cuda_graph_training(torch):
    # The whole-network capture of PyTorch's documentation: forward, backward and step.
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 4)).cuda()
    loss_fn = torch.nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    static_input = torch.randn(32, 64, device="cuda")
    static_target = torch.randn(32, 4, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(static_input), static_target).backward()
            optimizer.step()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = loss_fn(model(static_input), static_target)
        static_loss.backward()
        optimizer.step()
    losses = []
    for _ in range(20):
        graph.replay()
        losses.append(static_loss.item())
    assert losses[-1] < losses[0], losses


def case_compile_default(torch):
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 8)).cuda()
    compiled = torch.compile(model)
    x = torch.randn(32, 64, device="cuda")
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)


def case_compile_reduce_overhead(torch):
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 8)).cuda()
    compiled = torch.compile(model, mode="reduce-overhead")
    for _ in range(4):
        x = torch.randn(32, 64, device="cuda")
        out = compiled(x)
        torch.testing.assert_close(out, model(x), rtol=1e-4, atol=1e-4)
    # Training through cudagraph trees: forward and backward graphs.
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(4):
        x = torch.randn(32, 64, device="cuda")
        compiled(x).sum().backward()
        opt.step()
        opt.zero_grad()


def case_memory_history(torch):
    import pickle
    import tempfile

    torch.cuda.memory._record_memory_history(max_entries=10000)
    xs = [torch.randn(1 << 16, device="cuda") for _ in range(8)]
    del xs[::2]
    snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    traces = snapshot["device_traces"][0]
    actions = {t["action"] for t in traces}
    assert "alloc" in actions and "free_completed" in actions, actions
    assert any(t.get("frames") for t in traces if t["action"] == "alloc"), "no stack frames recorded"
    assert snapshot["segments"], "no segments"
    from torch.cuda import _memory_viz

    html = _memory_viz.trace_plot(snapshot)
    assert "<html" in html.lower() or len(html) > 1000
    with tempfile.NamedTemporaryFile(suffix=".pickle") as f:
        pickle.dump(snapshot, f)
        f.flush()
        with open(f.name, "rb") as g:
            _memory_viz.segment_plot(pickle.load(g))


def case_oom_typed(torch):
    total = torch.cuda.get_device_properties(0).total_memory
    try:
        torch.empty(2 * total, dtype=torch.uint8, device="cuda")
    except torch.OutOfMemoryError as error:
        message = str(error)
    else:
        raise AssertionError("no torch.OutOfMemoryError for twice the device")
    assert "out of memory" in message.lower(), message
    # The process keeps working.
    x = torch.ones(1 << 20, device="cuda")
    assert float(x.sum()) == float(1 << 20)


def case_oom_fill_loop(torch):
    # Fill the device 1 GiB at a time until PyTorch says it is full; then free and go on.
    held = []
    deadline = time.time() + 120
    while True:
        assert time.time() < deadline, "no out-of-memory error after %d GiB" % len(held)
        try:
            held.append(torch.empty(1 << 30, dtype=torch.uint8, device="cuda"))
        except torch.OutOfMemoryError:
            break
    total_gib = torch.cuda.get_device_properties(0).total_memory >> 30
    assert len(held) <= total_gib + 1, (len(held), total_gib)
    held[-1].fill_(3)
    del held
    x = torch.ones(1 << 28, device="cuda")
    assert float(x.sum()) == float(1 << 28)


def case_memory_fraction(torch):
    torch.cuda.set_per_process_memory_fraction(0.25)
    total = torch.cuda.get_device_properties(0).total_memory
    small = torch.empty(int(total * 0.10), dtype=torch.uint8, device="cuda")
    try:
        torch.empty(int(total * 0.30), dtype=torch.uint8, device="cuda")
    except torch.OutOfMemoryError:
        pass
    else:
        raise AssertionError("an allocation over the memory fraction succeeded")
    del small


def case_mempool(torch):
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        a = torch.randn(1 << 20, device="cuda")
    b = torch.randn(1 << 20, device="cuda")
    assert pool.use_count() >= 1
    segments = pool.snapshot()
    addresses = {s["address"] for s in segments}
    assert segments, "the pool's snapshot is empty"
    assert all(s["address"] != b.data_ptr() for s in segments), "memory outside the pool appears in it"
    torch.testing.assert_close(a.sum(), a.sum())
    del a, pool, addresses
    torch.cuda.synchronize()


IPC_N = 1 << 20


def _ipc_child(queue_in, queue_out):
    # PyTorch's own allocator (the child never installs rmm-rs): it must open what the parent's
    # allocator shared, whichever it is ('c' for cudaMalloc memory, 'e' for expandable memory).
    import torch

    tensor = queue_in.get()
    expected = torch.arange(IPC_N, device=tensor.device, dtype=torch.float32)
    seen = bool(torch.equal(tensor, expected))
    tensor += 1
    torch.cuda.synchronize()
    queue_out.put(seen)
    queue_in.get()  # until the parent is done


def case_ipc(torch):
    """A tensor sent to a spawned child on PyTorch's own allocator (a DataLoader worker's or
    consumer's view): the child reads the parent's values and its writes reach the parent."""
    import torch.multiprocessing as mp

    context = mp.get_context("spawn")
    queue_in, queue_out = context.Queue(), context.Queue()
    child = context.Process(target=_ipc_child, args=(queue_in, queue_out))
    child.start()
    pad = torch.empty(3 << 20, dtype=torch.uint8, device="cuda")  # the tensor does not start a page
    x = torch.arange(IPC_N, device="cuda", dtype=torch.float32)
    torch.cuda.synchronize()
    queue_in.put(x)
    seen = queue_out.get(timeout=120)
    torch.cuda.synchronize()
    queue_in.put(None)
    child.join(60)
    assert seen, "the child did not see the parent's values"
    torch.testing.assert_close(x, torch.arange(IPC_N, device="cuda", dtype=torch.float32) + 1)
    del pad


def _ipc_sender_child(queue_in, queue_out):
    # PyTorch's own allocator with expandable segments (the environment the parent gave it):
    # its tensor is shared as PyTorch's expandable-segment handle ('e').
    import torch

    pad = torch.empty(3 << 20, dtype=torch.uint8, device="cuda")
    x = torch.arange(IPC_N, device="cuda", dtype=torch.float32)
    torch.cuda.synchronize()
    queue_out.put(x)
    queue_in.get()  # the parent has read and written it
    torch.cuda.synchronize()
    queue_out.put(bool(torch.equal(x, torch.arange(IPC_N, device="cuda", dtype=torch.float32) + 1)))
    queue_in.get()
    del pad, x


def case_ipc_from_expandable(torch):
    """The other way: a spawned child on PyTorch's own allocator with expandable_segments:True
    sends a tensor, and this process (on its configuration's allocator) opens it."""
    import torch.multiprocessing as mp

    context = mp.get_context("spawn")
    queue_in, queue_out = context.Queue(), context.Queue()
    saved = os.environ.get("PYTORCH_CUDA_ALLOC_CONF")
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    try:
        child = context.Process(target=_ipc_sender_child, args=(queue_in, queue_out))
        child.start()
    finally:
        if saved is None:
            del os.environ["PYTORCH_CUDA_ALLOC_CONF"]
        else:
            os.environ["PYTORCH_CUDA_ALLOC_CONF"] = saved
    x = queue_out.get(timeout=120)
    torch.testing.assert_close(x, torch.arange(IPC_N, device="cuda", dtype=torch.float32))
    x += 1
    torch.cuda.synchronize()
    del x
    queue_in.put(None)
    written = queue_out.get(timeout=120)
    queue_in.put(None)
    child.join(60)
    assert written, "the child did not see this process's writes"
    assert child.exitcode == 0, child.exitcode


def case_cross_device(torch):
    if torch.cuda.device_count() < 2:
        raise NotApplicable("one GPU")
    x = torch.arange(1 << 20, device="cuda:0", dtype=torch.float32)
    y = x.to("cuda:1")
    z = (y * 2).to("cuda:0")
    torch.testing.assert_close(z, x * 2)
    model = torch.nn.Linear(64, 64).to("cuda:1")
    out = model(torch.randn(8, 64, device="cuda:0").to("cuda:1")).sum()
    out.backward()


def case_record_stream(torch):
    side = torch.cuda.Stream()
    x = torch.randn(1 << 22, device="cuda")
    with torch.cuda.stream(side):
        y = x * 2
    y.record_stream(torch.cuda.current_stream())
    torch.cuda.current_stream().wait_stream(side)
    total = float(y.sum())
    del y
    z = torch.zeros(1 << 22, device="cuda")
    torch.cuda.synchronize()
    assert abs(total - 2 * float(x.sum())) < 1e-2 * max(1.0, abs(total)), total
    del z


def case_checkpoint(torch):
    from torch.utils.checkpoint import checkpoint

    layer = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256)).cuda()
    x = torch.randn(64, 256, device="cuda", requires_grad=True)
    out = checkpoint(layer, x, use_reentrant=False)
    out.sum().backward()
    grad = x.grad.clone()
    x.grad = None
    layer(x).sum().backward()
    torch.testing.assert_close(grad, x.grad)


def case_transformers(torch):
    try:
        import transformers
    except ImportError as error:
        raise NotApplicable("transformers is not installed") from error
    config = transformers.GPT2Config(n_layer=2, n_head=4, n_embd=128, vocab_size=1000, n_positions=128)
    model = transformers.GPT2LMHeadModel(config).cuda()
    ids = torch.randint(0, 1000, (4, 64), device="cuda")
    out = model(ids, labels=ids)
    out.loss.backward()
    assert torch.isfinite(out.loss)


def case_autocast_matmul(torch):
    a = torch.randn(1024, 1024, device="cuda")
    b = torch.randn(1024, 1024, device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        c = a @ b
    torch.testing.assert_close(c.float(), a @ b, rtol=5e-2, atol=5e-1)


def bench_child(config, pairs):
    """ns per `torch.empty(4096)` plus its release on the current stream (medians of 5)."""
    torch = setup(config)
    for _ in range(2000):
        x = torch.empty(4096, device="cuda")
        del x
    torch.cuda.synchronize()
    samples = []
    for _ in range(5):
        start = time.perf_counter_ns()
        for _ in range(pairs):
            x = torch.empty(4096, device="cuda")
            del x
        samples.append((time.perf_counter_ns() - start) / pairs)
    torch.cuda.synchronize()
    print("NS %.1f" % sorted(samples)[2])


def run_bench(configs, pairs):
    """The pair benchmark for each configuration, each in its own process, rounds interleaved."""
    figures = {c: [] for c in configs}
    for _ in range(3):
        for config in configs:
            env = dict(os.environ)
            env.update(CONFIGS[config])
            out = subprocess.run([sys.executable, __file__, "--bench-child", "--config", config, "--pairs", str(pairs)],
                                 env=env, capture_output=True, text=True).stdout
            figures[config] += [float(line.split()[1]) for line in out.splitlines() if line.startswith("NS ")]
    base = sorted(figures.get("native") or [float("nan")])[len(figures.get("native") or [0]) // 2]
    print("\n| torch.empty(4096) + release | ns per pair (median of 3 processes) | vs. native |\n|---|---|---|")
    for config, values in figures.items():
        median = sorted(values)[len(values) // 2] if values else float("nan")
        print("| %s | %.0f | %.2f |" % (config, median, median / base))


CASES = {name[len("case_"):]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}


def run_child(case, config):
    torch = setup(config)
    try:
        CASES[case](torch)
    except NotApplicable as reason:
        print("NA", reason)
        sys.exit(3)
    torch.cuda.synchronize()
    print("PASS")


# Cases that fill the device run alone, after the others.
ALONE = {"oom_fill_loop"}


def run_one(config, case, timeout):
    env = dict(os.environ)
    env.update(CONFIGS[config])
    start = time.time()
    try:
        command = [sys.executable, "-X", "faulthandler", __file__, "--run", case, "--config", config]
        if os.environ.get("CONFORMANCE_GDB") and shutil.which("gdb"):  # a crash's native backtrace
            command = ["gdb", "-q", "-batch", "-ex", "run", "-ex", "bt 30", "--args"] + command
        proc = subprocess.run(command, env=env,
                              capture_output=True, text=True, timeout=timeout)
        status, output = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as expired:
        status, output = "timeout", str(expired.stdout or "") + str(expired.stderr or "")
    if status == 0 and "PASS" in output:
        verdict = "pass"
    elif status == 3:
        verdict = "n/a"
    else:
        lines = [line for line in output.strip().splitlines() if line.strip()]
        errors = [line for line in lines if "Error" in line or "error" in line]
        verdict = "FAIL: " + ((errors or lines or ["exit %s" % status])[-1][:160])
    print(json.dumps({"config": config, "case": case, "verdict": verdict, "s": round(time.time() - start, 1)}), flush=True)
    if verdict.startswith("FAIL") and os.environ.get("CONFORMANCE_VERBOSE"):
        print(output[-3000:], flush=True)
    return verdict


def run_all(configs, cases, timeout, jobs):
    from concurrent.futures import ThreadPoolExecutor

    together = [(c, k) for c in configs for k in cases if k not in ALONE]
    alone = [(c, k) for c in configs for k in cases if k in ALONE]
    results = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for key, verdict in zip(together, pool.map(lambda key: run_one(key[0], key[1], timeout), together)):
            results[key] = verdict
    for key in alone:
        results[key] = run_one(key[0], key[1], timeout)
    return results


def table(configs, cases, results):
    rows = ["| case | " + " | ".join(configs) + " |", "|---|" + "---|" * len(configs)]
    for case in cases:
        rows.append("| %s | %s |" % (case, " | ".join(results[(c, case)].replace("|", "/") for c in configs)))
    passed = {c: sum(results[(c, k)] == "pass" for k in cases) for c in configs}
    rows.append("| passed | %s |" % " | ".join(str(passed[c]) for c in configs))
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--run")
    parser.add_argument("--config", default="native")
    parser.add_argument("--configs", default="native,rmm-default,rmm-pool,rmm-expandable")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--jobs", type=int, default=4, help="child processes at once")
    parser.add_argument("--json")
    parser.add_argument("--bench", action="store_true", help="the torch.empty pair benchmark instead of the cases")
    parser.add_argument("--bench-child", action="store_true")
    parser.add_argument("--pairs", type=int, default=100000)
    args = parser.parse_args()
    if args.run:
        run_child(args.run, args.config)
        return
    if args.bench_child:
        bench_child(args.config, args.pairs)
        return
    configs = [c for c in args.configs.split(",") if c]
    if args.bench:
        run_bench(configs, args.pairs)
        return
    cases = [c for c in args.cases.split(",") if c]
    results = run_all(configs, cases, args.timeout, args.jobs)
    print()
    print(table(configs, cases, results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{"config": c, "case": k, "verdict": v} for (c, k), v in results.items()], f, indent=1)
    native_pass = {k for k in cases if results.get(("native", k)) == "pass"}
    failing = [(c, k) for c in configs if c.startswith("rmm") and c != "rmm-shim" for k in native_pass if results[(c, k)] != "pass"]
    sys.exit(1 if failing else 0)


if __name__ == "__main__":
    main()
