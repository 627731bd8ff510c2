"""A GPT-style model trains on over a sleep, under rmm-rs's PyTorch backend (docs/src/sleep.md).

    python3 bench/frameworks/sleep_gpt.py            the parent: runs the children, compares
    python3 bench/frameworks/sleep_gpt.py --child plain|sleep

Each child is a process of its own: the bench's GPT (bench.py, smaller: 4 layers x 512,
sequence 256, batch 8) with its parameters and AdamW state allocated in the tag ``weights``
(keep) and everything a step allocates besides (activations, gradients, scratch) in the tag
``scratch`` (discard), deterministic algorithms on. ``plain`` trains STEPS steps. ``sleep``
trains half, puts both tags to sleep, starts another process that takes most of the GPU with
PyTorch's own allocator and frees it, wakes both tags and trains the rest. The parent runs
``plain`` twice (so that a difference means something) and ``sleep`` once, and passes when the
losses and the final weights of ``sleep`` are bit-identical to ``plain``'s and the device
memory held while asleep is at most the context's plus 1%.

Environment: RMM_RS_LIBRARY (librmm.so), SLEEP_STEPS (default 8).
"""

import hashlib
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = int(os.environ.get("SLEEP_STEPS", "8"))
MIB = 1 << 20


def child(mode):
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    # Every kernel loads with the context, so that what the process holds after start is its
    # allocations only, not modules loaded lazily by the first steps.
    os.environ.setdefault("CUDA_MODULE_LOADING", "EAGER")
    sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
    sys.path.insert(0, HERE)
    import rmm_rs
    from rmm_rs import sleep as tags

    rmm_rs.use_for_torch()
    import torch
    from bench import gpt_model

    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.enable_flash_sdp(False)
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    torch.cuda.init()
    free_at_start, total = torch.cuda.mem_get_info()
    vocabulary, sequence, batch = 8192, 256, 8
    with tags.region("weights", keep=True):
        model = gpt_model(torch, layers=4, width=512, heads=8, vocabulary=vocabulary, sequence=sequence).cuda()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=False)
    generator = torch.Generator(device="cuda").manual_seed(1)

    def step():
        with tags.region("scratch"):
            tokens = torch.randint(0, vocabulary, (batch, sequence + 1), device="cuda", generator=generator)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(tokens[:, :-1])
                loss = torch.nn.functional.cross_entropy(logits.float().view(-1, vocabulary), tokens[:, 1:].reshape(-1))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
        with tags.region("weights", keep=True):
            optimizer.step()
        with tags.region("scratch"):
            optimizer.zero_grad(set_to_none=True)
            return loss.float().item().hex()

    losses = [step() for _ in range(STEPS // 2)]
    report = {}
    if mode == "sleep":
        pointers = [p.data_ptr() for p in model.parameters()]
        torch.cuda.synchronize()
        tags.pause()
        free_asleep, _ = torch.cuda.mem_get_info()
        # What of the memory held while asleep was rmm-rs's free memory outside the tags (the
        # default resource's), and what is the context's own (kernels loaded on first use,
        # library workspaces), which no allocator can give back.
        released_asleep = rmm_rs.release_device_memory()
        free_released, _ = torch.cuda.mem_get_info()
        # Another process takes most of what is free now and gives it back.
        taker = ("import torch; f, _ = torch.cuda.mem_get_info(); x = torch.empty(int(f * 0.9), dtype=torch.uint8, device='cuda'); "
                 "x.fill_(7); torch.cuda.synchronize(); print(int(f * 0.9) >> 20)")
        taken = subprocess.run([sys.executable, "-c", taker], capture_output=True, text=True)
        if taken.returncode != 0:
            raise SystemExit(f"the other process failed: {taken.stderr[-2000:]}")
        tags.resume()
        report.update({
            "held_asleep_above_start_mib": (free_at_start - free_asleep) / MIB,
            "released_asleep_mib": released_asleep / MIB,
            "held_after_release_above_start_mib": (free_at_start - free_released) / MIB,
            "other_process_took_mib": int(taken.stdout.split()[-1]),
            "addresses_kept": pointers == [p.data_ptr() for p in model.parameters()],
        })
    losses += [step() for _ in range(STEPS - STEPS // 2)]
    torch.cuda.synchronize()
    digest = hashlib.sha256()
    for tensor in list(model.state_dict().values()) + [s for state in optimizer.state.values() for s in state.values() if torch.is_tensor(s)]:
        digest.update(tensor.detach().float().cpu().numpy().tobytes())
    report.update({"losses": losses, "weights": digest.hexdigest(), "context_mib": (total - free_at_start) / MIB, "total_mib": total / MIB})
    print("RESULT " + json.dumps(report))


def run(mode):
    done = subprocess.run([sys.executable, __file__, "--child", mode], capture_output=True, text=True)
    sys.stderr.write(done.stderr[-3000:])
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"the {mode} run failed (status {done.returncode})")
    return json.loads(lines[-1][len("RESULT "):])


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        return child(sys.argv[2])
    plain, again, slept = run("plain"), run("plain"), run("sleep")
    deterministic = plain["losses"] == again["losses"] and plain["weights"] == again["weights"]
    identical = plain["losses"] == slept["losses"] and plain["weights"] == slept["weights"]
    held = slept["held_asleep_above_start_mib"]
    print(f"losses (plain): {[float.fromhex(x) for x in plain['losses']]}")
    print(f"two plain runs identical: {deterministic}; the run over a sleep identical to them: {identical}")
    print(f"while asleep the process held {held:+.1f} MiB against its CUDA context after start "
          f"(context {plain['context_mib']:.0f} MiB of {plain['total_mib']:.0f} MiB); the other process took "
          f"{slept['other_process_took_mib']} MiB; parameters at the same addresses: {slept['addresses_kept']}")
    print(f"of it, rmm-rs gave back {slept['released_asleep_mib']:.1f} MiB it held free outside the sleeping tags "
          f"(rmm_rs.release_device_memory), leaving {slept['held_after_release_above_start_mib']:+.1f} MiB over the "
          "context after start (the context's growth: kernels loaded on first use, library workspaces)")
    ok = identical and slept["addresses_kept"] and held <= 0.01 * plain["context_mib"] + 2
    if not deterministic:
        print("the plain runs differ from each other: identity over the sleep cannot be judged")
        ok = False
    print("sleep_gpt: passed" if ok else "sleep_gpt: FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
