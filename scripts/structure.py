#!/usr/bin/env python3
"""The layer rules and size habits of `shared/src`, checked from the code's own imports.

Every file of `shared/src` belongs to one layer (LAYERS, from the ground up). A file may import
files of its own layer or of layers below; an import up a layer is a break. No files may import
each other in a loop, in any layer. No non-test function may run over MAX_FUNCTION_LINES code
lines, and no file over MAX_FILE_LINES code lines (code lines: neither blank nor a comment, and
outside `#[cfg(test)]` modules). A table key (a string starting `WORD#`, e.g. `"TASK#"` or
`format!("CALL#{id}")`) is written only in KEYS_MODULE, outside tests.

An import names a module path (`use crate::store::claim::Claimed`, `super::item::Item`, or such
a path written inline); it is the file that defines the name it ends in (a re-export is followed
to the definition), or the module's file when the path names a module.

Usage: scripts/structure.py [--table] [--root DIR]. Prints every finding and the counts, and
exits 1 when any count is above zero. `--table` prints the counts as a Markdown table row.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

MAX_FUNCTION_LINES = 80
MAX_FILE_LINES = 400
KEYS_MODULE = "store/layout.rs"
KEY_LITERAL = re.compile(r'"[A-Z][A-Z0-9_-]*#')

# From the ground up: a file belongs to the first layer one of whose prefixes its path (relative
# to shared/src, without `.rs`) starts with. Keep in step with docs/design.md.
LAYERS: list[tuple[str, list[str]]] = [
    # The rules: entities, validated inputs, the state machine. No I/O.
    ("domain", ["domain/", "cache", "on_first_use"]),
    # Protocol shapes and telemetry formats.
    ("wire", ["a2a/", "metrics", "trace", "telemetry/", "sdk_http"]),
    # One adapter per backing service or remote peer, each with its own error type.
    ("adapters", ["store/", "bodies", "vault", "signing", "oidc/", "push/queue", "push/ssrf/",
                  "push/dial", "push/signature", "push/endpoint", "push/request"]),
    # The process's settings, read once from the environment.
    ("config", ["config", "bootstrap"]),
    # Every change to a task, and the services that drive changes: the push worker, the
    # sweeper, search; the one error type the edges render.
    ("tasks", ["tasks/", "push/", "search", "sweeper", "sweeper_holds", "error"]),
    # What a process holds: the adapters and services, built once.
    ("app", ["app"]),
    # HTTP: REST, both A2A bindings, the console; parse, authorize, call below, render.
    ("edges", ["http/"]),
    # The Lambda and local entry points.
    ("runtime", ["function", "runtime", "lib"]),
]

DEFINITION = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:unsafe\s+)?(?:const\s+)?"
    r"(?:struct|enum|fn|trait|type|const|static|mod|union|macro_rules!)\s+([A-Za-z_][A-Za-z0-9_]*)",
    re.M,
)
REEXPORT = re.compile(r"^\s*pub(?:\([^)]*\))?\s+use\s+([^;]+);", re.M)
USE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M)
INLINE = re.compile(r"(?<![A-Za-z0-9_:])((?:crate|super)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")
FUNCTION = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:const\s+)?(?:unsafe\s+)?fn\s+(\w+)")


def strip_tests(text: str) -> str:
    """The text without `#[cfg(test)]` items (their lines blanked, so line numbers hold)."""
    lines = text.split("\n")
    out = list(lines)
    i = 0
    while i < len(lines):
        if lines[i].strip() == "#[cfg(test)]":
            depth, started, j = 0, False, i
            while j < len(lines):
                depth += lines[j].count("{") - lines[j].count("}")
                started = started or "{" in lines[j]
                if started and depth <= 0 or (not started and lines[j].rstrip().endswith(";")):
                    break
                j += 1
            for k in range(i, min(j + 1, len(lines))):
                out[k] = ""
            i = j + 1
        else:
            i += 1
    return "\n".join(out)


def strip_comments_and_strings(text: str) -> str:
    """Comments and the contents of string and character literals removed, line breaks kept."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif ch == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            start = i + 2 + len(hashes)
            end = text.find('"' + hashes, start)
            end = n if end < 0 else end + 1 + len(hashes)
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif ch == "'" and re.match(r"'(\\.[^']*|[^'\\])'", text[i:]):
            literal = re.match(r"'(\\.[^']*|[^'\\])'", text[i:]).group(0)
            out.append("' '")
            i += len(literal)
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def code_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


class Crate:
    def __init__(self, src: Path) -> None:
        self.src = src
        self.files: dict[str, str] = {}
        self.sources: dict[str, str] = {}  # without tests, strings and comments kept
        for path in sorted(src.rglob("*.rs")):
            rel = path.relative_to(src).as_posix()
            self.sources[rel] = strip_tests(path.read_text())
            self.files[rel] = strip_comments_and_strings(self.sources[rel])

    def module_of(self, rel: str) -> list[str]:
        parts = rel[:-3].split("/")
        if parts[-1] in ("mod", "lib"):
            parts = parts[:-1]
        return parts

    def file_of(self, module: list[str]) -> str | None:
        if not module:
            return "lib.rs"
        base = "/".join(module)
        for candidate in (f"{base}.rs", f"{base}/mod.rs"):
            if candidate in self.files:
                return candidate
        return None

    def defines(self, rel: str, name: str) -> bool:
        return any(m.group(1) == name for m in DEFINITION.finditer(self.files[rel]))

    def resolve(self, module: list[str], path: list[str], depth: int = 0) -> str | None:
        """The file that defines what `path` (relative to `module`) names."""
        segments = list(module)
        for i, segment in enumerate(path):
            if segment == "crate":
                segments = []
            elif segment == "super":
                segments = segments[:-1]
            elif segment == "self":
                pass
            else:
                deeper = self.file_of(segments + [segment])
                if deeper is not None:
                    segments.append(segment)
                    continue
                return self.definer(segments, segment, depth)
        return self.file_of(segments)

    def definer(self, module: list[str], name: str, depth: int) -> str | None:
        home = self.file_of(module)
        if home is None:
            return None
        if self.defines(home, name) or depth > 8:
            return home
        for use in REEXPORT.finditer(self.files[home]):
            for path in expand(use.group(1)):
                if path[-1] == "*":
                    path = path[:-1] + [name]
                elif path[-1] != name:
                    continue
                target = self.resolve(module, path, depth + 1)
                if target is not None and target != home:
                    return target
        return home

    def names(self, rel: str, name: str) -> bool:
        """Whether `rel` defines `name` or brings it in with a `use`."""
        return self.defines(rel, name) or any(
            path[-1] == name for use in USE.finditer(self.files[rel]) for path in expand(use.group(1)))

    def imports(self, rel: str) -> dict[str, set[str]]:
        """Each file `rel` imports, with the paths that import it."""
        module = self.module_of(rel)
        text = self.files[rel]
        paths: list[list[str]] = []
        for use in USE.finditer(text):
            paths.extend(p for p in expand(use.group(1)) if p[0] in ("crate", "super", "self"))
        without_uses = USE.sub("", text)
        for inline in INLINE.finditer(without_uses):
            paths.append(inline.group(1).split("::"))
        found: dict[str, set[str]] = {}
        inline_module = re.search(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text, re.M)
        for path in paths:
            if path[-1] == "*":
                path = path[:-1]
            if inline_module and path[0] == "super" and len(path) > 1 and self.names(rel, path[1]):
                continue  # `super::` inside a module written inline names this file
            target = self.resolve(module, path)
            if target is not None and target != rel:
                found.setdefault(target, set()).add("::".join(path))
        return found


def expand(tree: str) -> list[list[str]]:
    """`a::{b, c::{d, e}}` as [[a, b], [a, c, d], [a, c, e]]."""
    tree = re.sub(r"\s+as\s+\w+", "", tree)
    tree = re.sub(r"\s+", "", tree)

    def walk(prefix: list[str], rest: str) -> list[list[str]]:
        if "{" not in rest:
            return [prefix + [s for s in rest.split("::") if s]]
        head, _, body = rest.partition("{")
        body = body[: body.rfind("}")]
        base = prefix + [s for s in head.split("::") if s]
        out, depth, start = [], 0, 0
        for i, ch in enumerate(body + ","):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                part = body[start:i]
                start = i + 1
                if part == "self":
                    out.append(base)
                elif part:
                    out.extend(walk(base, part))
        return out

    return [p for p in walk([], tree) if p]


def layer_of(rel: str) -> int:
    stem = rel[:-3]
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if stem == prefix.rstrip("/") or stem.startswith(prefix) and prefix.endswith("/"):
                return index
            if not prefix.endswith("/") and stem == prefix:
                return index
    raise SystemExit(f"structure.py: {rel} is on no layer: add it to LAYERS")


def loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one file (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def long_functions(text: str) -> list[tuple[str, int, int]]:
    """(name, first line, code lines) of each function over MAX_FUNCTION_LINES code lines."""
    lines = text.split("\n")
    found = []
    for number, line in enumerate(lines):
        match = FUNCTION.match(line)
        if not match:
            continue
        depth, started, count = 0, False, 0
        for body_line in lines[number:]:
            if body_line.strip():
                count += 1
            depth += body_line.count("{") - body_line.count("}")
            started = started or "{" in body_line
            if not started and body_line.rstrip().endswith(";"):
                break
            if started and depth <= 0:
                break
        if count > MAX_FUNCTION_LINES:
            found.append((match.group(2), number + 1, count))
    return found


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default=str(Path(__file__).resolve().parent.parent))
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args()
    crate = Crate(Path(args.root) / "shared" / "src")
    graph = {rel: set(crate.imports(rel)) for rel in crate.files}
    breaks = []
    for rel in sorted(crate.files):
        for target, paths in sorted(crate.imports(rel).items()):
            if layer_of(target) > layer_of(rel):
                breaks.append(f"{rel} ({LAYERS[layer_of(rel)][0]}) imports {target} "
                              f"({LAYERS[layer_of(target)][0]}): {', '.join(sorted(paths))}")
    circles = loops(graph)
    functions = [f"{rel}:{line} fn {name}: {count} code lines"
                 for rel in sorted(crate.files)
                 for name, line, count in long_functions(crate.files[rel])]
    files = [f"{rel}: {len(code_lines(text))} code lines"
             for rel, text in sorted(crate.files.items())
             if len(code_lines(text)) > MAX_FILE_LINES]
    keys = [f"{rel}:{number}: {line.strip()}"
            for rel, text in sorted(crate.sources.items()) if rel != KEYS_MODULE
            for number, line in enumerate(text.splitlines(), 1)
            if KEY_LITERAL.search(line) and not line.strip().startswith("//")]
    for title, items in (("imports up a layer", breaks),
                         ("loops", [" -> ".join(c) for c in circles]),
                         (f"functions over {MAX_FUNCTION_LINES} code lines", functions),
                         (f"files over {MAX_FILE_LINES} code lines", files),
                         (f"table keys written outside {KEYS_MODULE}", keys)):
        print(f"== {title}: {len(items)}")
        for item in items:
            print(f"  {item}")
    if args.table:
        print(f"| {len(breaks)} | {len(circles)} | {len(functions)} | {len(files)} | {len(keys)} |")
    return 1 if breaks or circles or functions or files or keys else 0


if __name__ == "__main__":
    sys.exit(main())
