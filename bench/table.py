"""Turns the benchmark CSV rows into Markdown tables: ns per allocation for each workload (the
median of the timed runs), one column per allocator; the churn footprint (peak reserved / peak
live bytes); the spread (fastest and slowest run); and what each adaptor adds over the bare
pool of the same run, by medians and by fastest runs."""
import csv
import sys

rows = []
for path in sys.argv[1:]:
    with open(path) as f:
        rows += [r for r in csv.DictReader(f) if r.get("workload")]
# "added_<workload>" rows: an adaptor's cost, timed interleaved with its bare pool;
# "interleaved_<workload>" rows: two ways into one pool timed interleaved, and their ratio.
added_rows = [r for r in rows if r["workload"].startswith("added_")]
interleaved_rows = [r for r in rows if r["workload"].startswith("interleaved_")]
rows = [r for r in rows if not r["workload"].startswith(("added_", "interleaved_"))]
workloads = list(dict.fromkeys(r["workload"] for r in rows))
allocators = list(dict.fromkeys(r["allocator"] for r in rows))
cell = {(r["workload"], r["allocator"]): r for r in rows}


def table(title, value, names=allocators, header=None):
    print("| " + title + " | " + " | ".join(header or names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for w in workloads:
        values = [value(cell[(w, a)]) if (w, a) in cell else "-" for a in names]
        if any(v != "-" for v in values):
            print(f"| {w} | " + " | ".join(values) + " |")


table("ns per allocation (median)", lambda r: r["ns_per_alloc"])
footprints = [cell[("churn_1000x16MiB", a)]["footprint"] if ("churn_1000x16MiB", a) in cell else "-" for a in allocators]
print("| churn footprint (reserved / peak live) | " + " | ".join(f if f not in ("0.000", "-") else "-" for f in footprints) + " |")
print()
table("fastest - slowest run", lambda r: f"{r.get('ns_min', '?')} - {r.get('ns_max', '?')}")

# Adaptors ("rmm-rs X/pool") against the bare pool of the same run: what each adds.
adaptors = [a for a in allocators if a.startswith("rmm-rs ") and a.endswith("/pool")]
if adaptors and any((w, "rmm-rs pool") in cell for w in workloads):
    for label, key in (("median", "ns_per_alloc"), ("fastest run", "ns_min")):
        print()
        header = [a[len("rmm-rs "):-len("/pool")] for a in adaptors]

        def added(r, key=key):
            base = cell.get((r["workload"], "rmm-rs pool"))
            return f"{float(r[key]) - float(base[key]):+.1f}" if base and key in r else "-"

        table(f"ns added over rmm-rs pool ({label})", added, adaptors, header)

if added_rows:
    print()
    names = list(dict.fromkeys(r["allocator"] for r in added_rows))
    kinds = list(dict.fromkeys(r["workload"] for r in added_rows))
    by = {(r["workload"], r["allocator"]): r for r in added_rows}
    print("| ns added over the bare pool, timed interleaved (median, range) | " + " | ".join(n[len("rmm-rs "):-len("/pool")] for n in names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for k in kinds:
        values = [f"{float(by[(k, n)]['ns_per_alloc']):+.1f} ({by[(k, n)]['ns_min']} .. {by[(k, n)]['ns_max']})" if (k, n) in by else "-" for n in names]
        print(f"| {k[len('added_'):]} | " + " | ".join(values) + " |")

if interleaved_rows:
    print()
    print("| the same pool, timed interleaved | median | fastest - slowest |")
    print("|---|---|---|")
    for r in interleaved_rows:
        digits = 2 if r["allocator"].startswith("ratio") else 1
        value = lambda key: f"{float(r[key]):.{digits}f}"
        print(f"| {r['workload'][len('interleaved_'):]}: {r['allocator']} | {value('ns_per_alloc')} | {value('ns_min')} - {value('ns_max')} |")
