"""torch.distributed on rmm-rs: DDP and FSDP2 over NCCL (torchrun, one process per GPU, each
rank's rmm-rs stack on its own GPU) and a model split over two GPUs in one process, each run
under PyTorch's allocator and under rmm-rs; scripts/gpu-distributed.sh runs it.

    python3 bench/frameworks/distributed_torch.py [--configs LIST] [--modes LIST] [--steps N]
    (internal: --worker MODE CONFIG OUT under torchrun; --split CONFIG OUT, one process)

Configurations (each a fresh set of processes: PyTorch picks its allocator before CUDA
starts): ``native`` (PyTorch's caching allocator), ``native-expandable``
(``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``), ``rmm-default`` (``rmm_rs.use_for_torch()``
with nothing configured: statistics/expandable) and ``rmm-pool`` (``RMM_ALLOC_CONF=statistics/pool``).

Modes, run in this order: ``ddp`` (DistributedDataParallel, one rank per GPU); ``split`` (half
the blocks on cuda:0, the rest on cuda:1, activations moved with ``.to()``; skipped with a
message on one GPU); ``fsdp2`` (``torch.distributed.fsdp.fully_shard`` on each block and the
root, one rank per GPU). With ``--budget``, launches that would start after it are listed as
not run.

The model is a GPT-style decoder (bench.py's, 8 layers x 1024, 16 heads, sequence 512,
vocabulary 32768), AdamW under bf16 autocast, the same seed and the same batches (made on the
host from a seeded generator, different per rank) under every configuration. Each run reports
its per-step losses, the median step time (the slowest rank's), and per GPU the peak device
memory held above the baseline taken after NCCL started (cudaMemGetInfo sampled every 5 ms,
the same way for every allocator), PyTorch's peak reserved and allocated bytes.

Checks (exit status 1 when one fails): every run finishes; each run's losses equal the
native run's of the same mode within a relative 1e-3 (bit-identical is reported); each
rank's process holds memory on the same GPUs as under PyTorch's allocator (where nvidia-smi
shows processes). The issue's targets are printed as met or missed without failing the run:
DDP step at most 1.03x native on rmm-default and rmm-pool, their memory per GPU at most
native-expandable's; the split model at most 1.03x native on every stack.
"""

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.abspath(os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, PYTHON_DIR)
sys.path.insert(0, HERE)

CONFIGS = {
    "native": {},
    "native-expandable": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
    "rmm-default": {},
    "rmm-pool": {"RMM_ALLOC_CONF": "statistics/pool"},
}
MODES = ["ddp", "split", "fsdp2"]
MIB = 1 << 20
# The model and batch: big enough that a step is GPU-bound (tens of ms on an H200), small
# enough for any GPU of 16 GB and a run of seconds.
LAYERS, WIDTH, HEADS, VOCABULARY, SEQUENCE, BATCH = 8, 1024, 16, 32768, 512, 8
LOSS_RTOL = 1e-3


# ---- in the training processes ---------------------------------------------------------------


class HeldMemory:
    """Device memory in use above a baseline, per device, sampled from a thread every 5 ms."""

    def __init__(self, torch, devices):
        self.torch, self.devices = torch, list(devices)
        self.baseline = {d: torch.cuda.mem_get_info(d)[0] for d in self.devices}
        self.lowest = dict(self.baseline)
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while self.running:
            self.sample()
            time.sleep(0.005)

    def sample(self):
        for d in self.devices:
            self.lowest[d] = min(self.lowest[d], self.torch.cuda.mem_get_info(d)[0])

    def stop(self):
        self.running = False
        self.thread.join()
        self.sample()
        return {d: (self.baseline[d] - self.lowest[d]) / MIB for d in self.devices}


def choose_allocator(config, device):
    """Before PyTorch starts CUDA. An rmm-rs rank first makes its own GPU current for rmm-rs,
    so that what use_for_torch() builds (and probes) lands there, not on GPU 0."""
    os.environ.update(CONFIGS[config])
    if config.startswith("rmm"):
        import rmm_rs

        if device is not None:
            rmm_rs.set_device(device)
        rmm_rs.use_for_torch()


def deterministic(torch):
    """The same losses run after run, so that allocators can be compared by them; without the
    NaN fill of every torch.empty that deterministic mode adds, which would time the fill."""
    torch.use_deterministic_algorithms(True, warn_only=True)
    importlib.import_module("torch.utils.deterministic").fill_uninitialized_memory = False


def batch_of(torch, step, rank, device):
    generator = torch.Generator().manual_seed(1000 * step + rank)
    tokens = torch.randint(0, VOCABULARY, (BATCH, SEQUENCE + 1), generator=generator)
    return tokens.to(device, non_blocking=True)


def train(torch, step_fn, steps, warmup, devices, held):
    losses, times = [], []
    for i in range(warmup + steps):
        for d in devices:
            torch.cuda.synchronize(d)
        start = time.perf_counter()
        loss = step_fn(i)
        for d in devices:
            torch.cuda.synchronize(d)
        seconds = time.perf_counter() - start
        held.sample()
        losses.append(float(loss))
        if i >= warmup:
            times.append(seconds)
    return losses, times


def memory_report(torch, devices, held_peaks):
    return {str(d): {"held_mib": held_peaks[d],
                     "reserved_mib": torch.cuda.max_memory_reserved(d) / MIB,
                     "allocated_mib": torch.cuda.max_memory_allocated(d) / MIB} for d in devices}


def gpus_of_pids(pids):
    """{pid: [GPU indices where it holds memory]} from nvidia-smi, or None when nvidia-smi
    shows none of them (containers often hide other processes' ids)."""
    try:
        gpus = subprocess.run(["nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30).stdout
        apps = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,gpu_bus_id", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    index_of = {}
    for line in gpus.strip().splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) == 2 and fields[0].isdigit():
            index_of[fields[1].lower()] = int(fields[0])
    found = {pid: [] for pid in pids}
    for line in apps.strip().splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) == 2 and fields[0].isdigit() and int(fields[0]) in found:
            found[int(fields[0])].append(index_of.get(fields[1].lower(), fields[1]))
    return found if any(found.values()) else None


def worker(mode, config, out, steps, warmup):
    local_rank = int(os.environ["LOCAL_RANK"])
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    choose_allocator(config, local_rank)
    import torch
    import torch.distributed as dist
    from bench import gpt_model

    deterministic(torch)
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    dist.init_process_group("nccl", device_id=device)
    dist.barrier()  # NCCL's communicator and buffers exist before the baseline
    torch.cuda.synchronize()
    held = HeldMemory(torch, [local_rank])

    torch.manual_seed(0)
    model = gpt_model(torch, layers=LAYERS, width=WIDTH, heads=HEADS, vocabulary=VOCABULARY, sequence=SEQUENCE).to(device)
    if mode == "ddp":
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
    elif mode == "fsdp2":
        from torch.distributed.fsdp import fully_shard

        for block in model.blocks:
            fully_shard(block)
        fully_shard(model)
    else:
        raise SystemExit(f"unknown mode {mode}")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step(i):
        tokens = batch_of(torch, i, rank, device)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(tokens[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.float().view(-1, VOCABULARY), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        # The loss every rank reports: the mean over ranks, as a user logs it.
        mean = loss.detach().clone()
        dist.all_reduce(mean, op=dist.ReduceOp.AVG)
        return mean.item()

    losses, times = train(torch, step, steps, warmup, [local_rank], held)
    peaks = held.stop()
    pids = [None] * world
    dist.all_gather_object(pids, os.getpid())
    placement = gpus_of_pids(pids) if rank == 0 else None
    dist.barrier()  # every rank alive while rank 0 asks nvidia-smi
    result = {"mode": mode, "config": config, "rank": rank, "world": world, "device": local_rank,
              "losses": losses, "median_step_ms": statistics.median(times) * 1e3,
              "memory": memory_report(torch, [local_rank], peaks), "torch": torch.__version__,
              "gpu": torch.cuda.get_device_name(local_rank)}
    if rank == 0:  # the GPUs each rank's process holds memory on, in rank order
        result["placement"] = None if placement is None else [sorted(placement[pid]) for pid in pids]
    with open(f"{out}.rank{rank}.json", "w") as f:
        json.dump(result, f)
    dist.destroy_process_group()


def split(config, out, steps, warmup):
    choose_allocator(config, None)
    import torch
    from bench import gpt_model

    deterministic(torch)
    first, second = torch.device("cuda", 0), torch.device("cuda", 1)
    torch.zeros(1, device=first), torch.zeros(1, device=second)
    torch.cuda.synchronize(0), torch.cuda.synchronize(1)
    held = HeldMemory(torch, [0, 1])
    torch.manual_seed(0)
    model = gpt_model(torch, layers=LAYERS, width=WIDTH, heads=HEADS, vocabulary=VOCABULARY, sequence=SEQUENCE)
    half = LAYERS // 2
    model.embed.to(first), model.position.to(first)
    for i, block in enumerate(model.blocks):
        block.to(first if i < half else second)
    model.norm.to(second), model.head.to(second)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def forward(tokens):
        x = model.embed(tokens) + model.position(torch.arange(tokens.shape[1], device=first))
        for i, block in enumerate(model.blocks):
            if i == half:
                x = x.to(second)  # the activations cross to the second GPU (peer copy)
            x = block(x)
        return model.head(model.norm(x))

    def step(i):
        tokens = batch_of(torch, i, 0, first)
        targets = tokens[:, 1:].to(second)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = forward(tokens[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.float().view(-1, VOCABULARY), targets.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss.item()

    losses, times = train(torch, step, steps, warmup, [0, 1], held)
    peaks = held.stop()
    result = {"mode": "split", "config": config, "rank": 0, "world": 1, "losses": losses,
              "median_step_ms": statistics.median(times) * 1e3, "memory": memory_report(torch, [0, 1], peaks),
              "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}
    with open(f"{out}.rank0.json", "w") as f:
        json.dump(result, f)


# ---- the parent: launches, compares, prints --------------------------------------------------


def launch(command, config, timeout):
    env = dict(os.environ)
    for variables in CONFIGS.values():
        for name in variables:
            env.pop(name, None)
    env.update(CONFIGS[config])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [PYTHON_DIR, HERE, env.get("PYTHONPATH")]))
    # Deterministic cuBLAS, so that losses can be compared run to run.
    env.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    start = time.time()
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
        ok, output = done.returncode == 0, done.stdout + done.stderr
    except subprocess.TimeoutExpired as error:
        ok, output = False, f"timed out after {timeout} s\n{error.stdout or ''}{error.stderr or ''}"
    return ok, output, time.time() - start


def read_results(out, world):
    results = []
    for rank in range(world):
        path = f"{out}.rank{rank}.json"
        if not os.path.exists(path):
            return None
        with open(path) as f:
            results.append(json.load(f))
    return results


def loss_match(losses, reference):
    if reference is None or len(losses) != len(reference):
        return None, None
    worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses, reference))
    return worst <= LOSS_RTOL, losses == reference


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--steps", type=int, default=30, help="timed steps (after --warmup)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--nproc", type=int, default=0, help="ranks for ddp/fsdp2 (0: one per GPU)")
    parser.add_argument("--timeout", type=int, default=150, help="seconds for one launch")
    parser.add_argument("--budget", type=float, default=0,
                        help="seconds for everything: no launch starts after them (0: no limit)")
    parser.add_argument("--json", help="write every result here")
    parser.add_argument("--worker", nargs=3, metavar=("MODE", "CONFIG", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--split", nargs=2, metavar=("CONFIG", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker, args.steps, args.warmup)
        return 0
    if args.split:
        split(*args.split, args.steps, args.warmup)
        return 0

    import torch  # the parent never starts CUDA: device_count reads NVML or the driver only

    configs = [c for c in args.configs.split(",") if c]
    modes = [m for m in args.modes.split(",") if m]
    unknown = [c for c in configs if c not in CONFIGS] + [m for m in modes if m not in MODES]
    if unknown:
        raise SystemExit(f"unknown configurations or modes: {unknown}")
    gpus = torch.cuda.device_count()
    world = args.nproc or gpus
    print(f"PyTorch {torch.__version__}, {gpus} GPUs; ddp/fsdp2 with {world} ranks; "
          f"{args.warmup} warm-up + {args.steps} timed steps; model {LAYERS}x{WIDTH}, batch {BATCH}x{SEQUENCE} per rank",
          flush=True)
    if "native" in configs:  # the reference every other run is compared with comes first
        configs.remove("native")
        configs.insert(0, "native")
    failures, rows, everything = [], [], []
    folder = tempfile.mkdtemp(prefix="rmm-distributed-")
    began = time.time()
    for mode in modes:
        if mode == "split" and gpus < 2:
            print(f"split: skipped, it needs two GPUs and this machine has {gpus}", flush=True)
            continue
        reference = native_placement = None
        for config in configs:
            if args.budget and time.time() - began > args.budget:
                print(f"{mode} {config}: not run, the time budget of {args.budget:.0f} s is spent", flush=True)
                rows.append((mode, config, None, None))
                continue
            out = os.path.join(folder, f"{mode}-{config}")
            if mode == "split":
                ranks = 1
                command = [sys.executable, os.path.abspath(__file__), "--split", config, out]
            else:
                ranks = world
                command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={world}",
                           os.path.abspath(__file__), "--worker", mode, config, out]
            command += ["--steps", str(args.steps), "--warmup", str(args.warmup)]
            ok, output, seconds = launch(command, config, args.timeout)
            results = read_results(out, ranks) if ok else None
            if results is None:
                failures.append(f"{mode} {config}: the run failed")
                print(f"{mode} {config}: FAILED after {seconds:.0f} s\n{output[-6000:]}", flush=True)
                rows.append((mode, config, None, "failed"))
                continue
            everything += results
            losses = results[0]["losses"]
            if config == "native":
                reference = losses
            match, identical = loss_match(losses, reference)
            if match is False:
                failures.append(f"{mode} {config}: losses differ from native's beyond {LOSS_RTOL}")
            # The GPUs each rank holds memory on under PyTorch's allocator are the reference: an
            # rmm-rs rank must add none (a stray context on GPU 0 costs hundreds of MiB there).
            placement = results[0].get("placement")
            if config == "native":
                native_placement = placement
            elif placement is not None and native_placement is not None and placement != native_placement:
                failures.append(f"{mode} {config}: GPUs per rank {placement}, under PyTorch's allocator {native_placement}")
            print(f"{mode} {config}: {seconds:.0f} s; median step {max(r['median_step_ms'] for r in results):.2f} ms; "
                  f"final loss {losses[-1]:.6f}; GPUs per process {placement or 'not shown by nvidia-smi'}", flush=True)
            rows.append((mode, config, results, (match, identical)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(everything, f, indent=1)
    print_tables(rows, failures)
    if failures:
        print(f"\ndistributed_torch: {len(failures)} failures:\n  " + "\n  ".join(failures))
        return 1
    print("\ndistributed_torch: every run finished and matched PyTorch's allocator's losses")
    return 0


def per_gpu(results, key):
    values = {}
    for result in results:
        for device, memory in result["memory"].items():
            values[int(device)] = memory[key]
    return values


def print_tables(rows, failures):
    base = {}
    for mode, config, results, _ in rows:
        if results:
            base[(mode, config)] = (max(r["median_step_ms"] for r in results), per_gpu(results, "held_mib"))
    print("\n| mode | stack | step ms | vs native | held MiB per GPU | reserved MiB per GPU | allocated MiB per GPU | losses vs native |")
    print("|---|---|---|---|---|---|---|---|")
    for mode, config, results, match in rows:
        if not results:
            print(f"| {mode} | {config} | {'failed' if match else 'not run'} | | | | | |")
            continue
        step, held = base[(mode, config)]
        native = base.get((mode, "native"))
        ratio = f"{step / native[0]:.3f}x" if native else "n/a"
        reserved, allocated = per_gpu(results, "reserved_mib"), per_gpu(results, "allocated_mib")
        show = lambda values: " / ".join(f"{values[d]:.0f}" for d in sorted(values))  # noqa: E731
        if config == "native":
            verdict = "reference"
        elif match[0] is None:
            verdict = "no native run"
        else:
            verdict = ("bit-identical" if match[1] else "within 1e-3") if match[0] else "DIFFERENT"
        print(f"| {mode} | {config} | {step:.2f} | {ratio} | {show(held)} | {show(reserved)} | {show(allocated)} | {verdict} |")
    print("\nTargets (issue 32):")
    for mode, config, results, _ in rows:
        if not results or config == "native" or (mode, "native") not in base:
            continue
        step, held = base[(mode, config)]
        ratio = step / base[(mode, "native")][0]
        if mode == "split" or (mode == "ddp" and config in ("rmm-default", "rmm-pool")):
            print(f"  {mode} {config}: step {ratio:.3f}x native (target <= 1.03): {'met' if ratio <= 1.03 else 'MISSED'}")
        if mode == "ddp" and config in ("rmm-default", "rmm-pool") and (mode, "native-expandable") in base:
            limit = base[(mode, "native-expandable")][1]
            worst = max(held[d] - limit.get(d, 0) for d in held)
            print(f"  {mode} {config}: held memory per GPU {'met' if worst <= 0 else 'MISSED'} "
                  f"(at most native-expandable's; worst GPU {worst:+.0f} MiB)")


if __name__ == "__main__":
    sys.exit(main())
