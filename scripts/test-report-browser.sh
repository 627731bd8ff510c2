#!/usr/bin/env bash
# Opens `rmm-replay report` pages in a real headless browser (Debian's Chromium) on a
# simulated device and checks that they draw, that the figures they show match the log
# (worked out here in Python, independently of rmm-rs), that a log of a million events is
# reported and drawn within bounded time, and that a page makes no network request (no
# external reference in the HTML, and none in Chromium's network log, which is first shown
# to catch a page that does make one). Installs chromium when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null; then
  echo "installing: chromium"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

cargo build --release --quiet --bin rmm-replay
replay="${CARGO_TARGET_DIR:-$PWD/target}/release/rmm-replay"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export RMM_SIM_DEVICES=1:64GiB

# open PAGE DOM NETLOG: the page's DOM after its scripts ran, and the browser's network log.
open_page() {
  timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$(mktemp -d -p "$work")" --host-resolver-rules="MAP * ~NOTFOUND" \
    --window-size=1280,2000 --log-net-log="$3" --dump-dom "file://$1" >"$2" 2>"$work/chromium.err"
}

echo "== logs: a small one with three streams, and a million events"
python3 - "$work" <<'EOF'
import random, sys
work = sys.argv[1]

def write(path, events, seed, streams, sizes):
    rng = random.Random(seed)
    live, nxt, micros = [], 0x7F0000000000, 13 * 3600 * 10**6
    with open(path, "w") as out:
        out.write("Thread,Time,Action,Pointer,Size,Stream\n")
        for _ in range(events):
            micros += rng.randint(1, 20)
            s, us = divmod(micros, 10**6)
            time = f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}.{us:06d}"
            if live and rng.random() < 0.47:
                j = rng.randrange(len(live)); live[j], live[-1] = live[-1], live[j]
                p, size, stream = live.pop()
                out.write(f"{rng.choice((101, 102))},{time},free,{p:#x},{size},{stream}\n")
            else:
                size, stream = rng.choice(sizes), rng.choice(streams)
                live.append((nxt, size, stream)); nxt += size + 256
                out.write(f"{rng.choice((101, 102))},{time},allocate,{nxt - size - 256:#x},{size},{stream}\n")

write(f"{work}/small.csv", 30000, 1, ["0", "0x55d0c2a3b4c0", "0x55d0c2a3c010"], [256, 4096, 65536, 1 << 20, 3 << 20])
write(f"{work}/million.csv", 1000000, 2, ["0", "0x55d0c2a3b4c0"], [256, 1024, 4096, 65536])
EOF

echo "== report of the small log"
"$replay" report -o "$work/small.html" "$work/small.csv"
echo "== report of a million events"
start=$(date +%s%N)
"$replay" report -o "$work/million.html" "$work/million.csv"
report_ms=$(( ($(date +%s%N) - start) / 1000000 ))

echo "== a progress bar on a terminal (script(1) gives the report one)"
shown=$(script -qc "'$replay' report -o '$work/tty.html' '$work/small.csv'" /dev/null)
case "$shown" in
  *"report ["*"events"*) ;;
  *) echo "FAIL: no progress bar on a terminal: $shown" >&2; exit 1 ;;
esac

echo "== the pages refer to nothing outside themselves"
for page in "$work/small.html" "$work/million.html"; do
  if grep -nEo 'https?://|src=|href=|@import|url\(' "$page" | head -5 | grep .; then
    echo "FAIL: $page refers to outside resources" >&2; exit 1
  fi
done

echo "== the network check catches a page that loads something"
echo '<html><body><img src="http://example.com/x.png"></body></html>' >"$work/leak.html"
open_page "$work/leak.html" "$work/leak.dom" "$work/leak.netlog"

echo "== Chromium: the small page"
open_page "$work/small.html" "$work/small.dom" "$work/small.netlog"
echo "== Chromium: the million-event page"
start=$(date +%s%N)
open_page "$work/million.html" "$work/million.dom" "$work/million.netlog"
browser_ms=$(( ($(date +%s%N) - start) / 1000000 ))

python3 - "$work" "$report_ms" "$browser_ms" <<'EOF'
import html.parser, json, sys
work, report_s, browser_s = sys.argv[1], int(sys.argv[2]) / 1000, int(sys.argv[3]) / 1000
failures = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)

def page_requests(netlog):
    """URLs the page asked for: requests with an origin (the browser's own have none)."""
    log = json.load(open(netlog))
    names = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    return [e["params"]["url"] for e in log["events"]
            if names[e["type"]] == "URL_REQUEST_START_JOB" and "url" in e.get("params", {})
            and e["params"].get("initiator") != "not an origin"]

class Dom(html.parser.HTMLParser):
    """The status element, the data-figure cells and the largest-allocation rows."""
    def __init__(self, text):
        super().__init__()
        self.status, self.figures, self.rows = {}, {}, []
        self.feed(text)
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id") == "status":
            self.status = a
        if "data-figure" in a:
            self.figures[a["data-figure"]] = a["data-value"]
        if tag == "tr" and "data-size" in a:
            self.rows.append((int(a["data-size"]), int(a["data-line"])))

def expected(csv):
    """Peak live bytes, its line and time (s from the first event), and the allocations live then."""
    events = []
    for number, line in enumerate(open(csv), start=1):
        if number > 1:
            thread, time, action, pointer, size, stream = line.strip().split(",")
            h, m, s = time.split(":")
            events.append((number, int(h) * 3600 + int(m) * 60 + float(s), action, pointer, int(size)))
    bytes_, peak, at = 0, -1, 0
    for i, (_, _, action, _, size) in enumerate(events):
        bytes_ += size if action == "allocate" else -size
        if bytes_ > peak:
            peak, at = bytes_, i
    live = {}
    for number, _, action, pointer, size in events[:at + 1]:
        if action == "allocate":
            live[pointer] = (size, number)
        else:
            del live[pointer]
    return peak, events[at][0], events[at][1] - events[0][1], sorted(live.values(), key=lambda a: (-a[0], a[1]))

check(any("example.com" in u for u in page_requests(f"{work}/leak.netlog")), "the network check sees a page's request")

for name, bound_ms in (("small", 2000), ("million", 3000)):
    dom = Dom(open(f"{work}/{name}.dom").read())
    peak, line, seconds, live = expected(f"{work}/{name}.csv")
    st = dom.status
    check(st.get("data-state") == "rendered", f"{name}: the page's script drew it (status {st.get('data-state')!r} {st.get('data-error', '')})")
    check(int(st.get("data-painted-pixels", 0)) > 5000, f"{name}: the chart has {st.get('data-painted-pixels')} painted pixels")
    check(float(st.get("data-render-ms", 1e9)) < bound_ms, f"{name}: drawn in {st.get('data-render-ms')} ms (bound {bound_ms} ms)")
    check(int(dom.figures.get("peak_live_bytes", -1)) == peak, f"{name}: peak live shown {dom.figures.get('peak_live_bytes')}, log {peak}")
    check(float(st.get("data-drawn-live-max", -1)) == peak, f"{name}: the drawn live series reaches the peak ({st.get('data-drawn-live-max')})")
    check(abs(float(dom.figures.get("peak_time", -1)) - seconds) < 1e-5, f"{name}: peak at {dom.figures.get('peak_time')} s, log {seconds:.6f} s")
    check(int(dom.figures.get("live_allocations_at_peak", -1)) == len(live), f"{name}: {dom.figures.get('live_allocations_at_peak')} allocations live at the peak, log {len(live)}")
    check(dom.rows == live[:20], f"{name}: the largest allocations at the peak (size, line) match the log")
    reserved = int(dom.figures.get("reserved_at_peak_bytes", -1))
    check(reserved >= peak, f"{name}: reserved at the peak {reserved} covers live {peak}")
    check(page_requests(f"{work}/{name}.netlog") == [], f"{name}: the page made no network request")

check(report_s < 60, f"million: report written in {report_s:.1f} s (bound 60 s)")
check(browser_s < 60, f"million: Chromium loaded and drew it in {browser_s:.1f} s (bound 60 s)")
sys.exit(1 if failures else 0)
EOF
echo "report pages pass in Chromium"
