"""A small PyTorch training run whose losses must not change under LD_PRELOAD=librmm_preload.so.

Trains a 3-layer MLP on fixed random data for a few hundred steps with deterministic
algorithms and prints every 50th loss, the final loss and the wall time. scripts/gpu-test.sh
runs it without and with the preload and compares the losses.
"""
import os
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402


def main() -> None:
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    device = torch.device("cuda")
    inputs = torch.randn(4096, 512, device=device)
    targets = torch.randn(4096, 10, device=device)
    model = torch.nn.Sequential(
        torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)
    ).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    start = time.perf_counter()
    for step in range(300):
        batch = torch.randint(0, inputs.shape[0], (256,), device=device)
        loss = torch.nn.functional.mse_loss(model(inputs[batch]), targets[batch])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % 50 == 0:
            print(f"step {step} loss {loss.item():.9f}")
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    print(f"final loss {loss.item():.9f}")
    print(f"peak allocated by torch {torch.cuda.max_memory_allocated()} bytes")
    print(f"TIME {elapsed:.3f} s")


if __name__ == "__main__":
    main()
