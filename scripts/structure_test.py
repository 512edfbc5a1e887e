#!/usr/bin/env python3
"""The layer check itself tested: on a small crate with one of each fault planted (an import up a layer, a loop, a long
function, a long file, a table key written outside store/layout.rs), it finds each
one and nothing else; on the crate as it stands it finds none (`scripts/structure.py`)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

PLANTED = {
    "lib.rs": "pub mod domain;\npub mod store;\npub mod http;\n",
    "domain/mod.rs": "pub mod task;\npub mod change;\n",
    # A loop: task -> change -> task.
    "domain/task.rs": "use super::change::Change;\npub struct Task(pub Vec<Change>);\n"
    # A table key written outside store/layout.rs (the one in its tests does not count).
    + "pub fn key(id: &str) -> String { format!(\"TASK#{id}\") }\n"
    + "#[cfg(test)]\nmod tests {\n    const K: &str = \"TASK#1\";\n}\n",
    "store/layout.rs": "pub fn task(id: &str) -> String { format!(\"TASK#{id}\") }\n",
    "domain/change.rs": "use super::task::Task;\npub enum Change { Of(Box<Task>) }\n",
    # An import up a layer: the store reaching for the HTTP edge; a function over 80 lines.
    "store/mod.rs": "use crate::http::serve;\n// a comment is no code line\npub fn long() {\n"
    + "    let _ = 1;\n" * 80 + "}\n",
    # A file over 400 code lines, and a long test function that does not count.
    "http/mod.rs": "pub fn serve() {}\npub const X: u8 = 0;\n"
    + "".join(f"pub const C{n}: u8 = {n % 200};\n" for n in range(400))
    + "#[cfg(test)]\nmod tests {\n    fn long() {\n" + "        let _ = 1;\n" * 90 + "    }\n}\n",
}


def run(root: Path) -> tuple[int, str]:
    done = subprocess.run([sys.executable, str(HERE / "structure.py"), "--table", "--root", str(root)],
                          capture_output=True, text=True)
    return done.returncode, done.stdout


def main() -> int:
    with tempfile.TemporaryDirectory() as temp:
        src = Path(temp) / "shared" / "src"
        for name, text in PLANTED.items():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            (src / name).write_text(text)
        code, out = run(Path(temp))
        expected = "| 1 | 1 | 1 | 1 | 1 |"
        assert code == 1 and expected in out, f"planted faults: wanted {expected}, got:\n{out}"
        assert "store/mod.rs (adapters) imports http/mod.rs (edges)" in out, out
        assert "domain/change.rs -> domain/task.rs" in out, out
        assert "store/mod.rs:3 fn long: 82 code lines" in out, out
        assert "http/mod.rs: 402 code lines" in out, out
        assert "domain/task.rs:3: pub fn key" in out, out
    code, out = run(HERE.parent)
    assert code == 0, f"shared/src breaks the layer rules:\n{out}"
    print("structure_test: the planted faults found, one of each; shared/src keeps the rules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
