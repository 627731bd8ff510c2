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
