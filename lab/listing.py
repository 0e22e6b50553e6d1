"""A kernel as its configuration compiles it: one listing, other configurations' lines left out.

A kernel built from a configuration (``lab.kernels.wgmma``, say) is a closure: its builder turns
the configuration into constants (``STAGES = 3``, ``HANDOFF = False``) and picks device
functions (the slots), and the kernel's source tests those constants in ``if`` statements that
Numba folds away at compile time. :func:`listing` does that folding on the source: starting from
the kernel, it reads each function's closure, keeps only the branches its constants select,
rewrites a test that is partly decided (``tid == 0 or (ELECT and tid < 32)`` with ``ELECT``
false is ``tid == 0``), and follows the device functions that the kept lines call, each listed
once, in the order they are first called. Comments are kept; intrinsics (functions of
``lab.hopper``, ``lab.ptx`` …, reached through a module) are not expanded.

The result reads as the code the compiler sees for that one configuration — what
``python -m lab show <kernel>`` prints.
"""
from __future__ import annotations

import ast
import inspect
import re
import sys
import textwrap
import tokenize

#: A region marker of :mod:`lab.page` (left out of listings).
_MARKER = re.compile(r"^\s*# (end)?region: ")
#: The decorator of an inlined device function: said once in the header, not before each.
DEVICE = '@cuda.jit(device=True, inline="always")'
#: The value of a test that the constants do not decide.
_UNKNOWN = object()
#: Closure values shown in the constants header: what a configuration sets.
_SCALARS = (bool, int, float, str)


def _python(fn):
    """The Python function behind a jitted kernel or device function (or ``fn`` itself)."""
    return getattr(fn, "py_func", fn)


def _is_function(value) -> bool:
    return inspect.isfunction(_python(value))


def _closure(fn) -> dict:
    py = _python(fn)
    cells = py.__closure__ or ()
    out = {}
    for name, cell in zip(py.__code__.co_freevars, cells):
        try:
            out[name] = cell.cell_contents
        except ValueError:                       # an empty cell
            pass
    return out


class _Folder:
    """Decides expressions from one function's closure constants."""

    def __init__(self, env: dict):
        self.env = {k: v for k, v in env.items() if isinstance(v, _SCALARS)}
        self.used: set[str] = set()

    def value(self, node):
        """The expression's value when the constants decide it, else :data:`_UNKNOWN`."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.env:
                self.used.add(node.id)
                return self.env[node.id]
            return _UNKNOWN
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            v = self.value(node.operand)
            return _UNKNOWN if v is _UNKNOWN else not v
        if isinstance(node, ast.BoolOp):
            values = [self.value(v) for v in node.values]
            is_and = isinstance(node.op, ast.And)
            for v in values:                     # a deciding operand decides it
                if v is not _UNKNOWN and bool(v) != is_and:
                    return v
            return values[-1] if all(v is not _UNKNOWN for v in values) else _UNKNOWN
        if isinstance(node, (ast.Compare, ast.BinOp)):
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            if names <= set(self.env) and not any(isinstance(n, ast.Call)
                                                    for n in ast.walk(node)):
                self.used |= names
                try:
                    return eval(compile(ast.Expression(node), "<test>", "eval"),
                                {"__builtins__": {}}, dict(self.env))
                except Exception:                # noqa: BLE001 (left as written)
                    return _UNKNOWN
        return _UNKNOWN

    def reduce(self, node):
        """``node`` with its decided operands of ``and``/``or`` taken out (None: no change)."""
        if not isinstance(node, ast.BoolOp):
            return None
        is_and = isinstance(node.op, ast.And)
        kept = []
        for v in node.values:
            val = self.value(v)
            if val is _UNKNOWN:
                kept.append(self.reduce(v) or v)
            elif bool(val) != is_and:            # decides the whole: not reached when unknown
                return None
        if len(kept) == len(node.values):
            return None if all(k is v for k, v in zip(kept, node.values)) else \
                ast.BoolOp(op=node.op, values=kept)
        return kept[0] if len(kept) == 1 else ast.BoolOp(op=node.op, values=kept)


class _Renderer:
    """The kept lines of one function's source."""

    def __init__(self, source: str, folder: _Folder, empty=lambda name: False):
        self.lines = source.splitlines()
        self.folder = folder
        self.empty = empty            # whether a called name does nothing in this build

    def block(self, stmts, shift: int, start: int) -> list[str]:
        """Statements ``stmts`` (with the comment lines before each, from line ``start``),
        ``shift`` columns to the left."""
        out: list[str] = []
        for node in stmts:
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
                    and isinstance(node.value.func, ast.Name) and self.empty(node.value.func.id):
                start = node.end_lineno + 1           # a call of a function that does nothing
                continue
            first = self._first(node)
            out += [self._shift(self.lines[i - 1], shift) for i in range(start, first)
                    if self.lines[i - 1].strip().startswith("#")
                    and not _MARKER.match(self.lines[i - 1])]
            out += self.statement(node, shift)
            start = node.end_lineno + 1
            if self._ends(node):                              # the rest is never reached
                break
        return out

    def _ends(self, node) -> bool:
        """Whether ``node`` always returns or raises, as the constants decide it."""
        if isinstance(node, (ast.Return, ast.Raise)):
            return True
        if isinstance(node, ast.If):
            value = self.folder.value(node.test)
            if value is _UNKNOWN:
                return bool(node.orelse) and self._ends(node.body[-1]) and \
                    self._ends(node.orelse[-1])
            branch = node.body if value else node.orelse
            return bool(branch) and self._ends(branch[-1])
        return False

    @staticmethod
    def _first(node) -> int:
        return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])

    @staticmethod
    def _shift(line: str, shift: int) -> str:
        return line[shift:] if line[:shift].strip() == "" else line.lstrip()

    def _indent(self, node) -> int:
        line = self.lines[node.lineno - 1]
        return len(line) - len(line.lstrip())

    def _text(self, a: int, b: int, shift: int) -> list[str]:
        return [self._shift(self.lines[i - 1], shift) for i in range(a, b + 1)]

    def statement(self, node, shift: int) -> list[str]:
        if isinstance(node, ast.If):
            return self._chain(node, shift, self._indent(node), "if")
        body = getattr(node, "body", None)
        if not isinstance(body, list) or not body:
            return self._simple(node, shift)
        head_end = body[0].lineno - 1          # the header, without the comments after it
        while head_end > node.lineno and (not self.lines[head_end - 1].strip()
                                          or self.lines[head_end - 1].strip().startswith("#")):
            head_end -= 1
        out = [ln for ln in self._text(self._first(node), head_end, shift)
               if ln.strip() != DEVICE]
        if isinstance(node, ast.FunctionDef) and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            first = self._shift(self.lines[body[0].lineno - 1], shift).rstrip()
            quote = first.lstrip()[:3]
            if body[0].end_lineno != body[0].lineno:          # its first line only
                first += " …" + quote if first.strip() != quote else " …" + quote
            out.append(first)
            body, start = body[1:], body[0].end_lineno + 1
        else:
            start = head_end + 1
        inner = self.block(body, shift, start) if body else []
        out += inner if _code(inner) else inner + [self._pass(node.body[0], shift)]
        orelse = getattr(node, "orelse", [])
        if orelse:                                            # for/while … else
            out += self._text(node.body[-1].end_lineno + 1, orelse[0].lineno - 1, shift)
            out += self.block(orelse, shift, orelse[0].lineno)
        return out

    def _simple(self, node, shift: int) -> list[str]:
        text = self._text(node.lineno, node.end_lineno, shift)
        folder = _FoldExpressions(self.folder)
        folded = folder.visit(ast.parse(textwrap.dedent(
            "\n".join(self.lines[node.lineno - 1:node.end_lineno]))))
        if folder.changed:
            indent = text[0][:len(text[0]) - len(text[0].lstrip())]
            comment = self._comment(self.lines[node.end_lineno - 1])
            return [indent + ast.unparse(folded).replace("\n", "\n" + indent) + comment]
        return text

    @staticmethod
    def _comment(line: str) -> str:
        """A line's trailing comment (two spaces and ``# …``), or ""."""
        try:
            for tok in tokenize.generate_tokens(iter([line]).__next__):
                if tok.type == tokenize.COMMENT:
                    return "  " + tok.string
        except (tokenize.TokenError, SyntaxError, IndentationError):
            pass
        return ""

    def _pass(self, first, shift: int) -> str:
        """``pass`` where the first statement of a block stood (its lines all left out)."""
        line = self.lines[first.lineno - 1]
        return self._shift(line[:len(line) - len(line.lstrip())] + "pass", shift)

    def _branch(self, body, shift: int, column: int) -> list[str]:
        """A branch's statements, printed at original column ``column``."""
        return self.block(body, shift + self._indent(body[0]) - column, body[0].lineno)

    def _chain(self, node: ast.If, shift: int, col: int, word: str) -> list[str]:
        """An ``if``/``elif`` chain from ``node``, whose keyword (``word``) sits at original
        column ``col``: decided tests keep only the branch they take."""
        pad = " " * (col - shift)
        value = self.folder.value(node.test)
        elif_next = (len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If)
                     and self.lines[node.orelse[0].lineno - 1].lstrip().startswith("elif"))
        if value is not _UNKNOWN and value:
            if word == "if":                                  # the branch replaces the chain
                return self._branch(node.body, shift, col)
            return [pad + "else:"] + self._branch(node.body, shift, col + 4)
        if value is not _UNKNOWN:                             # false: what follows it
            if elif_next:
                return self._chain(node.orelse[0], shift, col, word)
            if not node.orelse:
                return []
            if word == "if":
                return self._branch(node.orelse, shift, col)
            return [pad + "else:"] + self._branch(node.orelse, shift, col + 4)
        reduced = self.folder.reduce(node.test)
        test = ast.unparse(reduced if reduced is not None else node.test)
        header_end = node.body[0].lineno - 1
        comment = self._comment(self.lines[header_end - 1])
        if reduced is None and word == self.lines[node.lineno - 1].lstrip().split()[0] \
                and header_end == node.lineno:
            out = self._text(node.lineno, header_end, shift)
        else:
            out = [pad + f"{word} {test}:" + comment]
        body = self._branch(node.body, shift, col + 4)
        out += body if _code(body) else body + [pad + "    pass"]
        if elif_next:
            out += self._chain(node.orelse[0], shift, col, "elif")
        elif node.orelse:
            out += [pad + "else:"] + self._branch(node.orelse, shift, col + 4)
        return out


def _code(lines: list[str]) -> bool:
    """Whether ``lines`` hold a statement (not only comments)."""
    return any(ln.strip() and not ln.strip().startswith("#") for ln in lines)


class _FoldExpressions(ast.NodeTransformer):
    """Decided ``a if T else b`` and partly decided ``and``/``or`` inside one statement."""

    def __init__(self, folder: _Folder):
        self.folder = folder
        self.changed = False

    def visit_IfExp(self, node):
        value = self.folder.value(node.test)
        if value is _UNKNOWN:
            return self.generic_visit(node)
        self.changed = True
        return self.visit(node.body if value else node.orelse)


def _calls(tree) -> list[str]:
    """Names called in ``tree``, in order of first appearance."""
    seen: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id not in seen:
            seen.append(node.func.id)
    return seen


def _source(fn) -> str:
    return textwrap.dedent(inspect.getsource(_python(fn)))


def _name_in_module(fn) -> str:
    """``module.name`` of an intrinsic, as its module exports it."""
    module = getattr(fn, "__module__", None) or getattr(_python(fn), "__module__", "")
    for key, value in vars(sys.modules.get(module, object())).items():
        if value is fn:
            return f"{module}.{key}"
    return f"{module}.{_python(fn).__name__}"


def _does_nothing(lines: list[str]) -> bool:
    """Whether a rendered function's body is only ``pass`` (and a docstring or comments)."""
    body = ast.parse(textwrap.dedent("\n".join(lines))).body
    if len(body) != 1 or not isinstance(body[0], ast.FunctionDef):
        return False
    stmts = [st for st in body[0].body if not (isinstance(st, ast.Expr)
                                               and isinstance(st.value, ast.Constant))]
    return all(isinstance(st, ast.Pass) for st in stmts)


def _wrap(items: list[str], width: int = 96) -> list[str]:
    lines, line = [], "#"
    for item in items:
        if len(line) + len(item) + 2 > width and line != "#":
            lines.append(line.rstrip(","))
            line = "#"
        line += f" {item},"
    return lines + ([line.rstrip(",")] if line != "#" else [])


def listing(kernel, *, package: str | None = None, header: bool = True) -> str:
    """The kernel (a jitted kernel or any closure-built function) and every device function it
    reaches through its closures, as its closures' constants compile them, each function after
    the first that calls it. Functions outside ``package`` (by default the kernel's package:
    ``lab.kernels``) are intrinsics: named, not listed. ``header``: the constants and intrinsics
    it reads, first (left out of diffs, where their wrapping moves)."""
    package = package or ".".join(_python(kernel).__module__.split(".")[:2])
    listed: dict[int, str] = {}
    order: list = []
    constants: dict[str, object] = {}
    intrinsics: dict[str, str] = {}
    rendered: dict[int, list[str]] = {}

    def render(fn) -> list[str]:
        if id(fn) not in rendered:
            env = _closure(fn)

            def empty(name: str) -> bool:
                target = env.get(name)
                return (target is not None and _is_function(target)
                        and _python(target).__module__.startswith(package)
                        and _does_nothing(render(target)))
            source = _source(fn)
            rendered[id(fn)] = _Renderer(source, _Folder(env), empty).block(
                ast.parse(source).body, 0, 1)
        return rendered[id(fn)]

    def visit(fn) -> None:
        if id(fn) in listed:
            return
        env = _closure(fn)
        folder = _Folder(env)
        lines = render(fn)
        listed[id(fn)] = "\n".join(lines)
        order.append(fn)
        kept = ast.parse(textwrap.dedent("\n".join(lines)))
        names = {n.id for n in ast.walk(kept) if isinstance(n, ast.Name)}
        for name in sorted(names & set(folder.env)):
            constants.setdefault(name, env[name])
        for name in _calls(kept):
            target = env.get(name)
            if target is None or not _is_function(target):
                continue
            if _python(target).__module__.startswith(package):
                visit(target)
            else:
                intrinsics[name] = _name_in_module(target)

    visit(kernel)
    head = _wrap([f"{k} = {v!r}" for k, v in sorted(constants.items())]
                 + [f"{k} = {v}" for k, v in sorted(intrinsics.items())])
    parts = (["# the constants and intrinsics of this configuration", *head]
             if head and header else [])
    if any(DEVICE in _source(fn) for fn in order[1:]):
        parts.append(f"# (every function after the first is a device function: {DEVICE})")
    body = "\n\n".join(listed[id(fn)] for fn in order) + "\n"
    return "\n".join(parts) + "\n\n" + body if parts else body
