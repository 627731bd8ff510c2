"""Runs RAPIDS RMM's own Python tests (python/rmm/rmm/tests of the commit
scripts/fetch-rapids-python-suite.sh pins), unchanged, against rmm_rs: ``import rmm`` is rmm_rs
through python/as_rmm (the one shim, the name). scripts/rapids-python-suite.sh calls it; it is
pytest with a plugin (this module) that

- marks each failure listed in the expected list (rapids-python-suite-expected.txt beside this
  file) as an expected difference (pytest's xfail, with the listed reason), and a listed test
  that passes as XPASS ("now passes": take it off the list);
- on simulated devices only, reports as skipped a test that stops on a third-party CUDA library
  finding no CUDA driver (Numba's CudaSupportError, cuda-python's DynamicLibNotFoundError for
  the driver): the simulator is rmm-rs's, and those libraries have no stand-in;
- ends with one table (per file: loaded, passed, failed, expected (listed) failures, skipped)
  and the line ``RESULT ...``, which counts the listed failures apart: differences from RAPIDS
  (``all`` entries) and limits of the machine (``sim`` / ``gpu`` entries); the exit status is 1
  when anything failed that the list does not name.

    python3 python/tests/rapids_suite.py TESTS_DIR [--on sim|gpu] [--expected FILE] [pytest args...]
"""

from __future__ import annotations

import argparse
import collections
import fnmatch
import os
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = os.path.join(HERE, "rapids-python-suite-expected.txt")

# Exceptions that say "there is no CUDA driver here", raised by the CUDA libraries RAPIDS'
# tests use next to rmm (module, class name).
NO_DRIVER = {
    ("numba.cuda.cudadrv.error", "CudaSupportError"),
    ("cuda.pathfinder._dynamic_libs.load_dl_common", "DynamicLibNotFoundError"),
}
NO_DRIVER_REASON = "needs a CUDA driver (Numba, cuda-python or cuda.core found none): not on simulated devices"


@dataclass
class Entry:
    where: str  # all, sim or gpu
    pattern: str  # a test id pattern (fnmatch), or "<file> does-not-load"
    reason: str
    used: bool = False


def read_expected(path: str, on: str) -> List[Entry]:
    """The entries of the list that apply on `on`: lines ``<all|sim|gpu> <test id pattern>
    -- <reason>``, ``#`` comments."""
    entries = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            head, sep, reason = line.partition(" -- ")
            words = head.split()
            if not sep or len(words) not in (2, 3) or words[0] not in ("all", "sim", "gpu") or not reason.strip():
                raise SystemExit(f"{path}:{number}: expected '<all|sim|gpu> <test id> -- <reason>', got {line!r}")
            if words[0] in ("all", on):
                entries.append(Entry(words[0], " ".join(words[1:]), reason.strip()))
    return entries


@dataclass
class FileResult:
    loaded: bool = True
    load_error: str = ""
    outcomes: collections.Counter = field(default_factory=collections.Counter)
    failing: List[str] = field(default_factory=list)  # unexpected
    expected: List[str] = field(default_factory=list)
    now_passing: List[str] = field(default_factory=list)


def _grouped(test_ids: List[str]) -> List[str]:
    """Test ids without their file, each test's parameter sets counted: ``test_x[3 cases]``."""
    counts: Dict[str, int] = collections.Counter()
    for test_id in test_ids:
        name = test_id.split("::", 1)[-1]
        counts[name.split("[", 1)[0] if "[" in name else name] += 1
    return [name if count == 1 else f"{name}[{count} cases]" for name, count in counts.items()]


class Plugin:
    def __init__(self, entries: List[Entry], on: str) -> None:
        self.entries = entries
        self.on = on
        self.files: Dict[str, FileResult] = collections.defaultdict(FileResult)
        self.skip_reasons: collections.Counter = collections.Counter()

    def listed(self, test_id: str) -> Optional[Entry]:
        for entry in self.entries:
            if fnmatch.fnmatchcase(test_id, entry.pattern):
                entry.used = True
                return entry
        return None

    def no_driver(self, excinfo: Optional[pytest.ExceptionInfo]) -> bool:
        if self.on != "sim" or excinfo is None:
            return False
        error: Optional[BaseException] = excinfo.value
        while error is not None:
            if any((cls.__module__, cls.__name__) in NO_DRIVER for cls in type(error).__mro__):
                return True
            error = error.__cause__ or error.__context__
        return False

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(self, collector):
        outcome = yield
        report = outcome.get_result()
        if not isinstance(collector, pytest.Module):
            return
        name = os.path.basename(str(collector.path))
        result = self.files[name]
        if report.skipped:  # the whole module (pytest.importorskip at its top)
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            self.skip_reasons[reason.replace("Skipped: ", "")] += 1
            result.outcomes["skipped"] += 1
        if report.failed:
            result.loaded = False
            text = str(report.longrepr).strip().splitlines()
            result.load_error = next((line for line in reversed(text) if line.startswith("E ")), text[-1] if text else "")
            entry = self.listed(f"{name} does-not-load")
            if entry is not None:
                result.outcomes["expected" if entry.where == "all" else "limits"] += 1
                result.expected.append(f"{name} does-not-load")
            elif self.on == "sim" and ("CudaSupportError" in str(report.longrepr) or "DynamicLibNotFoundError" in str(report.longrepr)):
                # A module that calls a CUDA library while it loads (test_pool_memory_resource.py
                # calls numba.cuda.default_stream() in a decorator).
                result.loaded = True
                result.load_error = ""
                self.skip_reasons[NO_DRIVER_REASON] += 1
                result.outcomes["skipped"] += 1
                report.outcome = "skipped"
                report.longrepr = (str(collector.path), 0, "Skipped: " + NO_DRIVER_REASON)
            else:
                result.failing.append(f"{name} does-not-load")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if call.when == "call" or report.failed or report.skipped:
            self.classify(item, call, report)

    def classify(self, item, call, report) -> None:
        name = os.path.basename(str(item.path))
        result = self.files[name]
        test_id = item.nodeid.split("/")[-1]
        if report.failed and self.no_driver(call.excinfo):
            report.outcome = "skipped"
            report.longrepr = (str(item.path), item.location[1], "Skipped: " + NO_DRIVER_REASON)
        if report.skipped:
            if call.when != "teardown":
                reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
                self.skip_reasons[reason.replace("Skipped: ", "")] += 1
                result.outcomes["skipped"] += 1
            return
        entry = self.listed(test_id)
        if report.failed:
            if entry is not None:
                report.outcome = "skipped"
                report.wasxfail = entry.reason
                result.outcomes["expected" if entry.where == "all" else "limits"] += 1
                result.expected.append(test_id)
            else:
                result.outcomes["failed"] += 1
                result.failing.append(test_id)
        elif call.when == "call":
            result.outcomes["passed"] += 1
            if entry is not None:
                report.wasxfail = entry.reason
                result.now_passing.append(test_id)

    def summary(self) -> Tuple[str, int]:
        lines = ["", f"== RAPIDS RMM's Python suite ({'simulated devices' if self.on == 'sim' else 'the GPU'})"]
        lines.append(f"{'file':44} {'loaded':6} {'passed':>6} {'failed':>6} {'expected':>8} {'skipped':>7}  failing (* = not on the list)")
        totals: collections.Counter = collections.Counter()
        unexpected = now_passing = 0
        for name in sorted(self.files):
            result = self.files[name]
            counts = result.outcomes
            totals.update(counts)
            shown = [f"{t}*" for t in _grouped(result.failing)] + _grouped(result.expected)
            unexpected += len(result.failing)
            now_passing += len(result.now_passing)
            loaded = "yes" if result.loaded else ("no" if result.expected else "no*")
            lines.append(f"{name:44} {loaded:6} {counts['passed']:>6} {counts['failed']:>6} "
                         f"{counts['expected'] + counts['limits']:>8} "
                         f"{counts['skipped']:>7}  {' '.join(shown)}{'  ' + result.load_error if result.load_error else ''}")
            for test_id in result.now_passing:
                lines.append(f"now passes: {test_id} (take it off {os.path.basename(EXPECTED)})")
        for reason, count in sorted(self.skip_reasons.items(), key=lambda item: -item[1]):
            lines.append(f"skipped {count}: {reason}")
        loaded = sum(1 for r in self.files.values() if r.loaded)
        lines.append("")
        lines.append(f"RESULT {loaded} of {len(self.files)} files loaded; tests {totals['passed']} passed, "
                     f"{totals['failed']} failed, {totals['expected']} expected differences, "
                     f"{totals['limits']} listed limits of {'simulated devices' if self.on == 'sim' else 'this GPU'}, "
                     f"{totals['skipped']} skipped; "
                     f"{unexpected} unexpected, {now_passing} listed now passing")
        return "\n".join(lines), unexpected

    def pytest_terminal_summary(self, terminalreporter):
        text, _ = self.summary()
        terminalreporter.write_line(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tests", help="RAPIDS' python/rmm/rmm/tests folder")
    parser.add_argument("--on", choices=("sim", "gpu"), default="gpu" if os.environ.get("RMM_RS_TEST_GPU") == "1" else "sim")
    parser.add_argument("--expected", default=EXPECTED)
    args, extra = parser.parse_known_args()
    plugin = Plugin(read_expected(args.expected, args.on), args.on)
    # -p no:cacheprovider: nothing is written into the fetched tree; -rfE: why each failed;
    # every file is run even when one does not load.
    status = pytest.main(["-q", "-p", "no:cacheprovider", "-rfE", "--continue-on-collection-errors",
                          "--rootdir", args.tests, *extra, args.tests],
                         plugins=[plugin])
    _, unexpected = plugin.summary()
    if status not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) or unexpected:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
