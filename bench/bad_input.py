"""The bad-input run of the reliability suite, measured: one `pgcite ingest` of a folder holding
one file of each bad kind beside good pages, and one of a hostile zip (tests/bad_inputs.py), each
in a child process on a fresh embedded database with the bundled model. Prints what the user sees
for each file, and the run's wall time and peak memory (the child's maximum resident set).

    .venv/bin/python bench/bad_input.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.bad_inputs import write_bad_folder, write_bad_zip  # noqa: E402


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.chmod(work, 0o755)  # the embedded server may run as another user
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("PGCITE_")}, "PGCITE_HOME": str(work / "home")}
        pgcite = [str(ROOT / ".venv" / "bin" / "pgcite")]
        cases = [(work / "docs", write_bad_folder(work / "docs")), (work / "docs.zip", write_bad_zip(work / "docs.zip"))]
        subprocess.run(pgcite + ["status"], env=env, capture_output=True, check=True)  # the server starts outside the run
        failed = False
        try:
            for location, expected in cases:
                started = time.perf_counter()
                with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
                    child = subprocess.Popen(pgcite + ["ingest", str(location), "--source",
                                                       location.name.replace(".", "-"), "--json"],
                                             env=env, stdout=out, stderr=err, text=True)
                    _, status, usage = os.wait4(child.pid, 0)  # this child's own peak, not the largest so far
                    seconds, code = time.perf_counter() - started, os.waitstatus_to_exitcode(status)
                    out.seek(0), err.seek(0)
                    report, stderr = json.loads(out.read()), err.read()
                reasons = {s["path"]: s["reason"] for s in report["skipped"]}
                print(f"\n{location.name}: exit {code}, {seconds:.1f} s, peak memory {usage.ru_maxrss / 1024:.0f} MB, "
                      f"{report['new']} ingested, {len(reasons)} skipped")
                for path, want in expected.items():
                    seen = reasons.get(path, "ingested")
                    ok = seen.startswith(want) if want else path not in reasons
                    failed |= not ok
                    print(f"  {'ok ' if ok else 'BAD'} {path:<16} {seen}")
                failed |= code != 0 or "Traceback" in stderr
        finally:
            subprocess.run(pgcite + ["stop"], env=env, capture_output=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
