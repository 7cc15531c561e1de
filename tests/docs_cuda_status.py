#!/usr/bin/env python3
"""The CUDA status is stated once, in the "Status" section of docs/cuda.md, and no page
contradicts it.

The section carries a summary line,
    <!-- cuda-status: gpu_runs=N every_op_on_cuda=yes|no emulated_ci=yes|no -->
which this script checks against the repository:
  gpu_runs          the `## Run ...` headings of docs/gpu-runs.md (one per recorded run);
  every_op_on_cuda  docs/op_support.md (generated from the op-case table, and checked
                    against the registered kernels in every CUDA build) lists every op of
                    dispatcher/op_table.def with CUDA dtypes;
  emulated_ci       .ci/run builds and tests the emulated CUDA device.
It then scans README.md, docs/*.md, docs/notes/*.md and the comments of docs/examples
for status phrasings that the recorded state makes false ("the CUDA backend has ... so
far", "not yet run on a GPU" once a run is recorded, ...), and requires every paragraph of
README.md and docs/*.md that states a status to link to the section (cuda.md#status).

Usage: docs_cuda_status.py [SOURCE_ROOT]   (default: the checkout this file is in)
Exit status 1 with one line per problem.
"""
import re
import sys
from dataclasses import dataclass
from pathlib import Path

SUMMARY = re.compile(r"<!-- cuda-status: gpu_runs=(\d+) every_op_on_cuda=(yes|no) emulated_ci=(yes|no) -->")
STATUS_LINK = "cuda.md#status"


@dataclass
class State:
    gpu_runs: int
    every_op_on_cuda: bool
    emulated_ci: bool


# Status phrasings: (what the phrase says, when the recorded state makes it false, pattern).
# The patterns see one prose unit with its lines joined by spaces.
GPU = r"(?:a|an|the|any|one)\s+(?:real\s+)?(?:GPU|H200)s?\b"
CLAIMS = [
    ("some ops have no CUDA kernel", lambda s: s.every_op_on_cuda, [
        r"\bCUDA backend\s+(?:has|does\s+not\s+have|doesn't\s+have)\b[^.]{0,100}?\b(?:so\s+far|yet)\b",
        r"\bbackend\s+does(?:n't|\s+not)\s+have\s+(?:them\s+|it\s+)?yet\b",
        r"\black(?:s|ing)?\s+(?:CUDA\s+)?kernels\b",
        r"\bCPU\s+kernels\s+only\b",
        r"\bStatus\b[^.]{0,40}:\s+CPU\s+only\b",
        r"\bon\s+CUDA\s+tensors\b[^.]{0,40}\braises?\b",
        r"\bno\s+kernel\s+for\s+dispatch\s+keys\s+\{CUDA",
        r"\bCUDA\s+kernels\s+(?:will\s+)?(?:come|land|arrive)\b",
        r"\bCUDA\s+kernels\s+with\s+the\s+CUDA\s+backend\b",
        r"\buntil\s+the\s+CUDA\b[^.]{0,40}\b(?:exists?|lands?|comes?)\b",
        r"\bcopies,\s+casts,?\s+`?add`?\s+and\s+`?mul`?",
        r"\bstops\s+at\s+the\s+first\s+op\s+without\s+one\b",
    ]),
    ("the CUDA code has run nowhere but the host", lambda s: s.emulated_ci, [
        r"\b(?:has|have)\s+only\s+been\s+compiled\b",
        r"\bhost-run\s+tests\b[^.]{0,40}\ball\s+that\s+has\s+executed\b",
        r"\bWhat\s+has\s+executed\s+is\s+its\s+host\s+side\b",
    ]),
    ("no GPU has run mixt's CUDA code", lambda s: s.gpu_runs > 0, [
        r"\b(?:not\s+yet|never)\s+(?:(?:been\s+)?(?:run|ran|executed)\s+)?on\s+" + GPU,
        r"\bno\s+GPU\s+has\s+run\b",
        r"\bno\s+session\b[^.]{0,20}\bha[sd]\s+(?:had\s+)?(?:a\s+GPU|one)\b",
        r"\bNo\s+run\s+yet\b",
        r"\bno\s+(?:CUDA|GPU)\s+figures\s+yet\b",
        r"\b(?:wait|waits)\s+for\s+the\s+first\s+GPU\s+run\b",
        r"\bno\s+GPU\s+so\s+far\b",
    ]),
]
# "has run on a GPU": a run when said plainly, no run when negated in the same clause.
RAN_ON_GPU = re.compile(r"\b(?:has|have|had)\s+(?:been\s+)?(?:run|ran|executed|tested)\s+on\s+" + GPU, re.I)
NEGATION = re.compile(r"\b(?:no|not|never|none|nothing|neither|nor)\b|n't\b", re.I)
COMPILED = [(what, wrong, [re.compile(p, re.I) for p in patterns]) for what, wrong, patterns in CLAIMS]


def claims_in(text):
    """The status claims a prose unit makes: (what it says, when that is false, the words)."""
    found = []
    for what, wrong, patterns in COMPILED:
        for p in patterns:
            for m in p.finditer(text):
                found.append((what, wrong, m.group(0)))
    for m in RAN_ON_GPU.finditer(text):
        clause = re.split(r"[.;:!?]", text[:m.start()])[-1]
        if NEGATION.search(clause):
            found.append((COMPILED[2][0], COMPILED[2][1], clause.strip() + " " + m.group(0)))
        else:
            found.append(("mixt's CUDA code has run on a GPU", lambda s: s.gpu_runs == 0, m.group(0)))
    return found


def markdown_units(text):
    """(first line, text) of each paragraph, list item or table row; fenced code one line each."""
    units, current, start, fenced = [], [], 0, False

    def flush():
        if current:
            units.append((start, " ".join(current)))
        current.clear()

    for n, line in enumerate(text.splitlines(), 1):
        body = line.strip()
        if body.startswith("```"):
            flush()
            fenced = not fenced
            continue
        if fenced:
            units.append((n, body))
            continue
        if not body or body.startswith(("- ", "* ", "|", "#", "<!--")):
            flush()
        if body:
            if not current:
                start = n
            current.append(body)
    flush()
    return units


def comment_units(text):
    """(first line, text) of each run of consecutive `//` comments of a source file."""
    units, current, start = [], [], 0
    for n, line in enumerate(text.splitlines(), 1):
        i = line.find("//")
        if i < 0:
            if current:
                units.append((start, " ".join(current)))
            current = []
            continue
        if not current:
            start = n
        current.append(line[i + 2:].strip())
    if current:
        units.append((start, " ".join(current)))
    return units


def status_section(lines):
    """The [first, last) line numbers (1-based) of cuda.md's "## Status" section."""
    first = next((i + 1 for i, l in enumerate(lines) if l.strip() == "## Status"), None)
    if first is None:
        return None
    last = next((i + 1 for i in range(first, len(lines)) if lines[i].startswith("## ")), len(lines) + 1)
    return first, last


def recorded_state(root, problems):
    """The state the repository records."""
    runs = len(re.findall(r"^## Run ", (root / "docs/gpu-runs.md").read_text(), re.M))
    table_ops = set(re.findall(r"^MIXT_OP\((\w+),", (root / "dispatcher/op_table.def").read_text(), re.M))
    cuda_dtypes = {}
    for name, cuda in re.findall(r"^\| `([^`]+)` \|[^|]*\|[^|]*\|([^|]*)\|$", (root / "docs/op_support.md").read_text(),
                                 re.M):
        cuda_dtypes[name] = cuda.strip()
    if not table_ops:
        problems.append("dispatcher/op_table.def: no MIXT_OP rows found")
    unlisted = sorted(table_ops - set(cuda_dtypes))
    if unlisted:
        problems.append("docs/op_support.md does not list ops of the op table: " + ", ".join(unlisted))
    holes = sorted(n for n, d in cuda_dtypes.items() if n in table_ops and d in ("", "—", "-"))
    every_op = bool(table_ops) and not unlisted and not holes
    emulated = "-Dcuda=emulated" in (root / ".ci/run").read_text()
    return State(runs, every_op, emulated), holes


def check(root):
    problems = []
    cuda_md = (root / "docs/cuda.md").read_text()
    summary = SUMMARY.search(cuda_md)
    section = status_section(cuda_md.splitlines())
    if not summary or not section:
        return ["docs/cuda.md: no \"## Status\" section with a summary line " + SUMMARY.pattern]
    said = State(int(summary.group(1)), summary.group(2) == "yes", summary.group(3) == "yes")
    actual, holes = recorded_state(root, problems)
    if said.gpu_runs != actual.gpu_runs:
        problems.append(f"docs/cuda.md: the status says gpu_runs={said.gpu_runs}, docs/gpu-runs.md records "
                        f"{actual.gpu_runs} (`## Run ...` headings)")
    if said.every_op_on_cuda != actual.every_op_on_cuda:
        problems.append("docs/cuda.md: the status says every_op_on_cuda=" + ("yes" if said.every_op_on_cuda else "no") +
                        (", but docs/op_support.md has CUDA holes: " + ", ".join(holes) if holes else
                         ", but docs/op_support.md gives every op CUDA dtypes"))
    if said.emulated_ci != actual.emulated_ci:
        problems.append("docs/cuda.md: the status says emulated_ci=" + ("yes" if said.emulated_ci else "no") +
                        ", but .ci/run " + ("builds" if actual.emulated_ci else "does not build") + " -Dcuda=emulated")

    pages = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    notes = sorted((root / "docs/notes").glob("*.md"))
    examples = sorted(p for p in (root / "docs/examples").iterdir() if p.suffix in (".cpp", ".h", ".cu"))
    for path in pages + notes + examples:
        rel = path.relative_to(root).as_posix()
        text = path.read_text()
        units = comment_units(text) if path in examples else markdown_units(text)
        skip = section if rel == "docs/cuda.md" else None
        for line, unit in units:
            if skip and skip[0] <= line < skip[1]:
                continue
            found = claims_in(unit)
            for what, wrong, words in found:
                if wrong(actual):
                    problems.append(f"{rel}:{line}: \"{words}\" says {what}, which contradicts the status "
                                    f"(docs/cuda.md#status)")
            link = "(#status)" if rel == "docs/cuda.md" else STATUS_LINK
            if found and path in pages and link not in unit:
                problems.append(f"{rel}:{line}: \"{found[0][2]}\" states a CUDA status without linking to it "
                                f"({STATUS_LINK})")
    return problems


def self_test():
    """The scanner sees each kind of claim, and negation turns a run into no run."""
    none = State(0, True, True)
    ran = State(1, True, True)
    cases = [
        ("It runs on the CPU: the CUDA backend has copies, casts, `add` and `mul` so far.", none, True),
        ("On CUDA tensors they raise mixt::Error.", none, True),
        ("Every CUDA kernel has only been compiled.", none, True),
        ("No CUDA kernel of mixt has run on a GPU.", none, False),
        ("No CUDA kernel of mixt has run on a GPU.", ran, True),
        ("The engine has run on an H200 since June.", none, True),
        ("The engine has run on an H200 since June.", ran, False),
        ("Status: not yet run on a GPU; run on the emulated device.", ran, True),
        ("Run in CI on the emulated device, **not yet on a GPU**.", ran, True),
        ("Every op has a CUDA kernel or a composite.", ran, False),
    ]
    for text, state, contradicts in cases:
        got = any(wrong(state) for _, wrong, _ in claims_in(text))
        if got != contradicts:
            return [f"self-test: \"{text}\" with {state}: contradiction {got}, expected {contradicts}"]
    return []


def main():
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
    problems = self_test() or check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s): fix the page, or the status (docs/cuda.md#status) when the state changed")
        return 1
    print("the CUDA status agrees with the repository and every page")
    return 0


if __name__ == "__main__":
    sys.exit(main())
