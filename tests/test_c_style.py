"""The C kernels keep their functions short (house style: functions under ~60 lines).

Parses every ``csrc/*.c`` and ``csrc/*.h`` as text (no compiler, no
preprocessor run) and measures each function definition, including the ones
written inside a ``#define`` (the per-dtype templates such as
``DEFINE_CLUSTER_SUMS`` in sums.c) and the bodies of the ``*_impl.h``
templates included once per dtype. A function's length is its count of lines
that hold code, from the line of its name to its closing brace: blank lines
and lines holding only a comment do not count, so documenting a step costs
nothing.

``ALLOWED`` lists the functions that may stay longer, each with its reason.
"""

import re
from pathlib import Path

import pytest


CSRC = Path(__file__).resolve().parents[1] / "csrc"

MAX_LINES = 60

# (file, function name as written) -> why it may stay longer, for a function
# that reads better whole. None does today.
ALLOWED = {}

_KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "do", "else",
             "_Pragma", "defined"}
_ATTRIBUTES = {"__attribute__", "__declspec", "ML_CLONES", "ML_TARGET"}


def _strip_comments_and_strings(text):
    """The text with comments removed and string/char literals emptied; every
    newline is kept, so line numbers stay. Returns (code, comment_only) where
    comment_only[i] is True when line i held a comment and no code."""
    out = []
    had_comment = set()
    i, n, line = 0, len(text), 0
    while i < n:
        c = text[i]
        if c == "\n":
            out.append(c)
            line += 1
            i += 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            chunk = text[i:j]
            for k in range(chunk.count("\n") + 1):
                had_comment.add(line + k)
            out.append("\n" * chunk.count("\n") or " ")
            line += chunk.count("\n")
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            had_comment.add(line)
            out.append(" ")
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = min(j + 1, n)
        else:
            out.append(c)
            i += 1
    code = "".join(out)
    lines = code.split("\n")
    comment_only = [k in had_comment and not lines[k].strip().rstrip("\\").strip()
                    for k in range(len(lines))]
    return code, comment_only


def _unfold_macros(code):
    """Preprocessor lines blanked, except the bodies of multi-line #define:
    the ``#define NAME(args)`` head is blanked and the continuation backslashes
    dropped, so that a function written inside a macro reads as a function."""
    lines = code.split("\n")
    out = []
    in_define = False
    for ln in lines:
        s = ln.rstrip()
        cont = s.endswith("\\")
        body = s[:-1] if cont else s
        if in_define:
            out.append(body)
        elif body.lstrip().startswith("#"):
            m = re.match(r"\s*#\s*define\s+\w+(\([^)]*\))?", body)
            out.append(" " * m.end() + body[m.end():] if (m and cont) else "")
            in_define = bool(m) and cont
            continue
        else:
            out.append(body)
        in_define = in_define and cont
    return out


def _matching_open(code, close):
    depth = 0
    for k in range(close, -1, -1):
        if code[k] == ")":
            depth += 1
        elif code[k] == "(":
            depth -= 1
            if depth == 0:
                return k
    return -1


def _name_before(code, k):
    """The identifier (or SUF(name) / name##SUF chain) that ends just before k."""
    j = k
    while j > 0 and code[j - 1] in " \t\n":
        j -= 1
    if j > 0 and code[j - 1] == ")":  # SUF(name)(...)
        op = _matching_open(code, j - 1)
        head = _name_before(code, op)
        return None if head is None else head + code[op:j]
    m = re.search(r"[A-Za-z_][\w#]*$", code[max(0, j - 200):j])
    return m.group(0) if m else None


def functions(text):
    """[(name, first line, last line, code lines)] of the function definitions
    in a C source's text (lines 1-based)."""
    code, comment_only = _strip_comments_and_strings(text)
    lines = _unfold_macros(code)
    flat = "\n".join(lines)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln) + 1)

    def line_of(pos):
        lo, hi = 0, len(starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if starts[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return lo

    found = []
    depth, k = 0, 0
    while k < len(flat):
        c = flat[k]
        if c == "{":
            if depth == 0:
                found.append(_definition_at(flat, k))
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0 and found and found[-1] is not None and len(found[-1]) == 2:
                name, start = found[-1]
                found[-1] = (name, start, k)
        k += 1
    result = []
    for item in found:
        if item is None or len(item) != 3:
            continue
        name, start, end = item
        a, b = line_of(start), line_of(end)
        n_code = sum(1 for t in range(a, b + 1)
                     if lines[t].strip() and not comment_only[t])
        result.append((name, a + 1, b + 1, n_code))
    return result


def _definition_at(flat, brace):
    """(name, start offset) when the '{' at `brace` opens a function body."""
    j = brace
    while j > 0 and flat[j - 1] in " \t\n":
        j -= 1
    while j > 0 and flat[j - 1] == ")":
        op = _matching_open(flat, j - 1)
        if op < 0:
            return None
        name = _name_before(flat, op)
        if name is None:
            return None
        base = name.split("(")[0]
        if base in _ATTRIBUTES:  # an attribute after the parameter list
            j = flat.rfind(base, 0, op)
            while j > 0 and flat[j - 1] in " \t\n":
                j -= 1
            continue
        if base in _KEYWORDS:
            return None
        return (name, flat.rfind(base, 0, op))
    return None


def _sources():
    return sorted(list(CSRC.glob("*.c")) + list(CSRC.glob("*.h")))


def _long_functions():
    long = []
    for path in _sources():
        for name, first, last, n in functions(path.read_text()):
            if n > MAX_LINES and (path.name, name) not in ALLOWED:
                long.append(f"{path.name}:{first}-{last} {name}: {n} lines")
    return long


def test_c_functions_are_short():
    long = _long_functions()
    assert not long, (f"C functions over {MAX_LINES} lines of code (split them "
                      "into static helpers):\n" + "\n".join(long))


def test_allow_list_is_current():
    """Every allowed function exists and is still long: a stale entry would
    let a new long function of the same name through."""
    seen = {}
    for path in _sources():
        for name, _, _, n in functions(path.read_text()):
            seen[(path.name, name)] = max(n, seen.get((path.name, name), 0))
    for key, reason in ALLOWED.items():
        assert key in seen, f"{key} on the allow-list is not in csrc/"
        assert seen[key] > MAX_LINES, f"{key} is short now: drop it from ALLOWED ({reason})"


_PLANTED = r'''
/* a comment { with a brace } and "a string {" */
#define ML_SMALL(x) ((x) + 1)
static int short_one(int a) {
    return a + 1;
}
#define DEFINE_LONG(SUF, REAL)                  \
int long_in_macro_##SUF(const REAL *x) {        \
%(macro_body)s
    return 0;                                   \
}
DEFINE_LONG(f64, double)
int SUF(templated)(const REAL *x, ptrdiff_t n)
    __attribute__((unused)) {
%(plain_body)s
    return 0;
}
static const int table[] = {1, 2, 3};
struct s { int a; };
'''


def _planted(n_macro, n_plain):
    macro = "\n".join(f"    x += {i};  /* step */ \\" for i in range(n_macro))
    plain = "\n".join(f"    x[{i}] = 0;\n\n    // only a comment" for i in range(n_plain))
    return _PLANTED % {"macro_body": macro, "plain_body": plain}


def test_checker_sees_functions_in_macros_and_templates():
    found = {name: n for name, _, _, n in functions(_planted(70, 10))}
    assert set(found) == {"short_one", "long_in_macro_##SUF", "SUF(templated)"}
    assert found["short_one"] == 3
    assert found["long_in_macro_##SUF"] == 70 + 3
    # 10 code lines; the blank and comment-only lines between them do not count
    assert found["SUF(templated)"] == 10 + 4


@pytest.mark.parametrize("n_macro, n_plain, expect", [
    (10, 10, set()),
    (70, 10, {"long_in_macro_##SUF"}),
    (10, 70, {"SUF(templated)"}),
])
def test_checker_flags_long_planted_functions(n_macro, n_plain, expect):
    long = {name for name, _, _, n in functions(_planted(n_macro, n_plain))
            if n > MAX_LINES}
    assert long == expect


def test_checker_finds_the_real_kernels():
    """The parse sees known definitions in each kind of file (a checker that
    found nothing would pass every tree)."""
    names = {(p.name, f[0]) for p in _sources() for f in functions(p.read_text())}
    for key in [("gram_impl.h", "SUF(ml_gaussian_gram)"),
                ("sums.c", "ml_cluster_sums_##SUFFIX"),
                ("gram.c", "ml_expneg_f64"),
                ("mixture.c", "ml_gmm_estep")]:
        assert key in names, key
