"""PyTorch workloads on synthetic data, run once per allocator, each in a process of its own
(PyTorch's allocator is chosen before CUDA starts, and no allocator inherits another's cache).

    python3 bench/frameworks/bench.py                 every workload with every allocator,
                                                      then a Markdown table
    python3 bench/frameworks/bench.py --child gpt native   one run (what the parent starts)

Allocators: PyTorch's caching allocator (``native``), the same with
``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`` (``expandable``), and rmm-rs through
``rmm_rs.use_for_torch()`` over each of its suballocators (``rmm-pool``, ``rmm-arena``,
``rmm-binning``, ``rmm-expandable``; statistics off, as a user measuring footprint would run it),
and ``rmm-spec:SPEC`` for any stack of the spec language without a comma (e.g.
``rmm-spec:expandable:page_size=32MiB``).

Workloads (nothing downloaded):
- ``gpt``: a GPT-style decoder (12 layers x 768, 12 heads, sequence 1024, vocabulary 50304),
  one AdamW training step per iteration under bf16 autocast;
- ``resnet``: a ResNet-50-style CNN (bottleneck blocks 3-4-6-3), batch 64 at 224 x 224,
  one SGD step per iteration;
- ``decode``: a 12 x 768 decoder generating tokens for batches of changing size, its key and
  value cache of every layer grown by ``torch.cat`` at each token.

Each run reports the median step time, the peak device memory held above the process's
baseline and, under PyTorch's own allocators, the peaks of live tensor bytes and of
reserved bytes (``torch.cuda.max_memory_allocated``/``max_memory_reserved``); held memory above
the reserved peak is not the allocator's (kernels loaded lazily, library handles), so peak
live plus it is the floor of held memory that no allocator can go below. Held memory is
measured so: a sampler thread reads ``cudaMemGetInfo`` every 5 ms (and after each step), the
same way for every allocator, so what an allocator caches counts. A run of its own
(``gpt-batch``) finds the largest GPT batch that trains: doubling from 16, then bisecting,
two steps per probe, each probe a process of its own.

Environment: RMM_RS_LIBRARY (librmm.so), BENCH_ALLOCATORS, BENCH_WORKLOADS (comma lists),
BENCH_STEPS (timed steps, default 10), BENCH_MAX_BATCH=0 skips the batch search, BENCH_LOG
(a path: rmm-rs allocators log every allocation there in RMM's CSV format, for rmm-replay).
rmm-expandable runs also report the page source's device calls (``vmm_activity``).
"""

import json
import os
import statistics
import subprocess
import sys
import threading
import time

ALLOCATORS = ["native", "expandable", "rmm-pool", "rmm-arena", "rmm-binning", "rmm-expandable"]
WORKLOADS = ["gpt", "resnet", "decode"]
MIB = 1 << 20


def choose_allocator(name):
    """Before torch touches CUDA."""
    if name == "expandable":
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    elif name.startswith("rmm-spec:"):
        # Any stack of the spec language (no commas: BENCH_ALLOCATORS splits on them).
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
        import rmm_rs

        rmm_rs.configure_from_string(name[len("rmm-spec:"):])
        rmm_rs.use_for_torch()
    elif name.startswith("rmm-"):
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
        import rmm_rs

        rmm_rs.configure(name[len("rmm-"):], statistics=False, log=os.environ.get("BENCH_LOG") or None)
        rmm_rs.use_for_torch()
    elif name != "native":
        raise SystemExit(f"unknown allocator {name}")


class HeldMemory:
    """Device memory in use above the baseline, sampled from another thread."""

    def __init__(self, torch):
        self.torch = torch
        self.baseline_free = torch.cuda.mem_get_info()[0]
        self.lowest_free = self.baseline_free
        self.running = True
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self):
        while self.running:
            self.sample()
            time.sleep(0.005)

    def sample(self):
        self.lowest_free = min(self.lowest_free, self.torch.cuda.mem_get_info()[0])

    def stop(self):
        self.running = False
        self.thread.join()
        self.sample()
        return (self.baseline_free - self.lowest_free) / MIB


def gpt_model(torch, layers=12, width=768, heads=12, vocabulary=50304, sequence=1024):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.out = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, heads, c // heads).permute(2, 0, 3, 1, 4)
            attention = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.out(attention.transpose(1, 2).reshape(b, t, c))
            return x + self.mlp(self.norm2(x))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.position = nn.Embedding(vocabulary, width), nn.Embedding(sequence, width)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.norm, self.head = nn.LayerNorm(width), nn.Linear(width, vocabulary, bias=False)

        def forward(self, tokens):
            x = self.embed(tokens) + self.position(torch.arange(tokens.shape[1], device=tokens.device))
            for block in self.blocks:
                x = block(x)
            return self.head(self.norm(x))

    return Gpt()


def gpt_step(torch, model, optimizer, batch, sequence=1024, vocabulary=50304):
    tokens = torch.randint(0, vocabulary, (batch, sequence + 1), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.float().view(-1, vocabulary), tokens[:, 1:].reshape(-1))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss


def resnet_model(torch):
    nn = torch.nn

    class Bottleneck(nn.Module):
        def __init__(self, inputs, width, stride):
            super().__init__()
            outputs = 4 * width
            self.body = nn.Sequential(
                nn.Conv2d(inputs, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                nn.Conv2d(width, outputs, 1, bias=False), nn.BatchNorm2d(outputs))
            self.skip = (nn.Sequential(nn.Conv2d(inputs, outputs, 1, stride, bias=False), nn.BatchNorm2d(outputs))
                         if stride != 1 or inputs != outputs else nn.Identity())

        def forward(self, x):
            return torch.relu(self.body(x) + self.skip(x))

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    inputs = 64
    for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for i in range(blocks):
            layers.append(Bottleneck(inputs, width, stride if i == 0 else 1))
            inputs = 4 * width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(inputs, 1000)]
    return nn.Sequential(*layers)


def run_child(workload, allocator):
    choose_allocator(allocator)
    import torch

    torch.manual_seed(0)
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    steps = int(os.environ.get("BENCH_STEPS", "10"))
    held = HeldMemory(torch)
    times = []

    def timed(step):
        torch.cuda.synchronize()
        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        held.sample()
        return time.perf_counter() - start

    result = {"workload": workload, "allocator": allocator, "torch": torch.__version__,
              "gpu": torch.cuda.get_device_name()}
    if workload == "gpt":
        batch = int(os.environ.get("BENCH_GPT_BATCH", "16"))
        model = gpt_model(torch).cuda()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        for i in range(steps + 2):
            seconds = timed(lambda: gpt_step(torch, model, optimizer, batch))
            if i >= 2:
                times.append(seconds)
        result["batch"] = batch
    elif workload == "resnet":
        model = resnet_model(torch).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        images = torch.randn(64, 3, 224, 224, device="cuda")
        labels = torch.randint(0, 1000, (64,), device="cuda")

        def step():
            loss = torch.nn.functional.cross_entropy(model(images), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

        for i in range(steps + 2):
            seconds = timed(step)
            if i >= 2:
                times.append(seconds)
    elif workload == "decode":
        model = gpt_model(torch, sequence=2048).cuda().to(torch.bfloat16).eval()
        width, heads = 768, 12

        @torch.no_grad()
        def generate(batch, prompt=256, new_tokens=64):
            # Attention over a cache grown by torch.cat at every token, layer by layer.
            x = model.embed(torch.randint(0, 50304, (batch, prompt), device="cuda"))
            caches = []
            for block in model.blocks:
                q, k, v = block.qkv(block.norm1(x)).view(batch, -1, 3, heads, width // heads).permute(2, 0, 3, 1, 4)
                caches.append([k, v])
                x = x + block.out(torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
                                  .transpose(1, 2).reshape(batch, -1, width))
                x = x + block.mlp(block.norm2(x))
            token = model.head(model.norm(x[:, -1:])).argmax(-1)
            for _ in range(new_tokens):
                x = model.embed(token)
                for block, cache in zip(model.blocks, caches):
                    q, k, v = block.qkv(block.norm1(x)).view(batch, 1, 3, heads, width // heads).permute(2, 0, 3, 1, 4)
                    cache[0] = torch.cat([cache[0], k], dim=2)
                    cache[1] = torch.cat([cache[1], v], dim=2)
                    attention = torch.nn.functional.scaled_dot_product_attention(q, cache[0], cache[1])
                    x = x + block.out(attention.transpose(1, 2).reshape(batch, 1, width))
                    x = x + block.mlp(block.norm2(x))
                token = model.head(model.norm(x)).argmax(-1)
            return token

        batches = [8, 32, 16, 48, 4, 24, 40, 12]
        for i in range(steps + 2):
            batch = batches[i % len(batches)]
            seconds = timed(lambda: generate(batch))
            if i >= 2:
                times.append(seconds)
    elif workload == "gpt-probe":
        # One probe of the batch search (see largest_gpt_batch), in a process of its own.
        held.stop()
        result["trains"], result["refusal"] = gpt_trains(torch, int(os.environ["BENCH_GPT_BATCH"]))
        print("RESULT " + json.dumps(result), flush=True)
        return
    else:
        raise SystemExit(f"unknown workload {workload}")
    result["median_step_ms"] = statistics.median(times) * 1e3
    result["peak_held_mib"] = held.stop()
    if allocator.startswith("rmm-"):
        import rmm_rs

        def find(node):
            # The page source's activity, under whatever adaptors lie on top.
            if isinstance(node, dict):
                if "activity" in node:
                    return node["activity"]
                for value in node.values():
                    found = find(value)
                    if found:
                        return found
            return None

        result["vmm_activity"] = find(rmm_rs.Resource.of_device().snapshot())
    if not allocator.startswith("rmm-"):
        # PyTorch's own counts (a pluggable allocator's process has none): the most the tensors
        # held at once, and the most the allocator reserved. Held memory above the reserved
        # peak is not the allocator's (kernels loaded lazily, library handles), so peak live
        # plus that is the floor of held memory for any allocator.
        result["peak_live_mib"] = torch.cuda.max_memory_allocated() / MIB
        result["peak_reserved_mib"] = torch.cuda.max_memory_reserved() / MIB
        result["floor_held_mib"] = result["peak_live_mib"] + max(0.0, result["peak_held_mib"] - result["peak_reserved_mib"])
    print("RESULT " + json.dumps(result), flush=True)


def gpt_trains(torch, batch):
    """Whether the GPT model trains two steps at `batch`; and how a refusal other than
    OutOfMemoryError showed."""
    model = gpt_model(torch).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    try:
        for _ in range(2):
            gpt_step(torch, model, optimizer, batch)
        torch.cuda.synchronize()
        return True, None
    except torch.cuda.OutOfMemoryError:
        return False, None
    except RuntimeError as error:
        # A pluggable allocator's refusal is a NULL pointer: PyTorch passes it on, and the
        # failure shows where it is used (cuDNN's attention: "mha_graph.execute", or an
        # illegal memory access).
        return False, str(error).splitlines()[0][:160]


def largest_gpt_batch(allocator, start):
    """Doubling from `start`, then bisecting: the largest batch that trains two steps. Each
    probe runs in a process of its own: where a refusal reaches a kernel as a NULL pointer
    (PyTorch's pluggable allocator does not check), the illegal memory access stays with the
    CUDA context, and every later probe in that process would fail too."""
    refusals = []

    def trains(batch):
        child = subprocess.run([sys.executable, __file__, "--child", "gpt-probe", allocator],
                               capture_output=True, text=True, timeout=600,
                               env={**os.environ, "BENCH_GPT_BATCH": str(batch)})
        lines = [line[len("RESULT "):] for line in child.stdout.splitlines() if line.startswith("RESULT ")]
        if not lines:
            refusals.append(f"batch {batch}: the probe's process failed (exit {child.returncode})")
            return False
        probe = json.loads(lines[-1])
        if probe["refusal"]:
            refusals.append(probe["refusal"])
        return probe["trains"]

    good, bad = 0, start
    while trains(bad):
        good, bad = bad, bad * 2
    while bad - good > 1:
        middle = (good + bad) // 2
        good, bad = (middle, bad) if trains(middle) else (good, middle)
    return good, sorted(set(refusals))


def table(results):
    by = {}
    for r in results:  # the batch search ran apart; it shows with the gpt workload
        by.setdefault(("gpt" if r["workload"] == "gpt-batch" else r["workload"], r["allocator"]), {}).update(r)
    allocators = list(dict.fromkeys(r["allocator"] for r in results))
    lines = ["| workload | figure | " + " | ".join(allocators) + " |", "|---" * (len(allocators) + 2) + "|"]
    for workload in WORKLOADS:
        rows = [("peak held (MiB)", "peak_held_mib", "{:.0f}"), ("peak live tensors (MiB)", "peak_live_mib", "{:.0f}"),
                ("peak reserved (MiB)", "peak_reserved_mib", "{:.0f}"),
                ("floor of held: live + memory not the allocator's (MiB)", "floor_held_mib", "{:.0f}"),
                ("median step (ms)", "median_step_ms", "{:.1f}")]
        if workload == "gpt":
            rows.append(("largest batch", "largest_batch", "{}"))
        for label, key, form in rows:
            cells = [form.format(by[(workload, a)][key]) if (workload, a) in by and key in by[(workload, a)] else "-"
                     for a in allocators]
            lines.append(f"| {workload} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        run_child(sys.argv[2], sys.argv[3])
        return
    allocators = os.environ.get("BENCH_ALLOCATORS", ",".join(ALLOCATORS)).split(",")
    workloads = os.environ.get("BENCH_WORKLOADS", ",".join(WORKLOADS)).split(",")
    if "gpt" in workloads and os.environ.get("BENCH_MAX_BATCH", "1") != "0":
        workloads.append("gpt-batch")
    results = []
    for workload in workloads:
        for allocator in allocators:
            if workload == "gpt-batch":
                largest, refusals = largest_gpt_batch(allocator, int(os.environ.get("BENCH_GPT_BATCH", "16")))
                results.append({"workload": workload, "allocator": allocator, "largest_batch": largest,
                                "refusals": refusals})
                print(json.dumps(results[-1]), flush=True)
                continue
            child = subprocess.run([sys.executable, __file__, "--child", workload, allocator],
                                   capture_output=True, text=True, timeout=900)
            lines = [line[len("RESULT "):] for line in child.stdout.splitlines() if line.startswith("RESULT ")]
            if child.returncode != 0 or not lines:
                print(f"{workload} {allocator}: failed (exit {child.returncode})\n{child.stderr[-3000:]}", flush=True)
                continue
            results.append(json.loads(lines[-1]))
            print(lines[-1], flush=True)
    if results:
        described = next((r for r in results if "gpu" in r), None)
        if described:
            print(f"\n{described['gpu']}, PyTorch {described['torch']}\n")
        print(table(results))


if __name__ == "__main__":
    main()
