"""Turns the benchmark CSV rows into a Markdown table: ns per allocation for each workload,
one column per allocator, and the churn footprint (peak reserved / peak live bytes)."""
import csv
import sys

rows = []
for path in sys.argv[1:]:
    with open(path) as f:
        rows += [r for r in csv.DictReader(f) if r.get("workload")]
workloads = list(dict.fromkeys(r["workload"] for r in rows))
allocators = list(dict.fromkeys(r["allocator"] for r in rows))
cell = {(r["workload"], r["allocator"]): r for r in rows}
print("| ns per allocation | " + " | ".join(allocators) + " |")
print("|---" * (len(allocators) + 1) + "|")
for w in workloads:
    values = [cell[(w, a)]["ns_per_alloc"] if (w, a) in cell else "-" for a in allocators]
    print(f"| {w} | " + " | ".join(values) + " |")
footprints = [cell[("churn_1000x16MiB", a)]["footprint"] if ("churn_1000x16MiB", a) in cell else "-" for a in allocators]
print("| churn footprint (reserved / peak live) | " + " | ".join(f if f not in ("0.000", "-") else "-" for f in footprints) + " |")

# Adaptors ("rmm-rs X/pool") against the bare pool of the same run: what each adds.
adaptors = [a for a in allocators if a.startswith("rmm-rs ") and a.endswith("/pool")]
if adaptors and any((w, "rmm-rs pool") in cell for w in workloads):
    print()
    print("| ns added per allocation over rmm-rs pool | " + " | ".join(a[len("rmm-rs "):-len("/pool")] for a in adaptors) + " |")
    print("|---" * (len(adaptors) + 1) + "|")
    for w in workloads:
        if not all((w, a) in cell for a in adaptors) or (w, "rmm-rs pool") not in cell:
            continue
        base = float(cell[(w, "rmm-rs pool")]["ns_per_alloc"])
        print(f"| {w} | " + " | ".join(f"{float(cell[(w, a)]['ns_per_alloc']) - base:+.1f}" for a in adaptors) + " |")
