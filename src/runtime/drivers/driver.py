"""corral's Python session driver (docs/session-protocol.md).

Runs code cells in one persistent namespace and reports events on fd 4:
the last expression's value and rich displays as MIME bundles, the error
with its traceback, and the end of every cell. The cell's own output goes
to fd 1 and fd 2 unframed. Standard library only; matplotlib is handled
only if the cell imports it (through the corral_mpl backend beside this
file)."""

import ast
import base64
import json
import linecache
import os
import signal
import sys
import threading
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(HERE)
# figures go to corral_mpl, which sends them as display events
os.environ["MPLBACKEND"] = "module://corral_mpl"

# The protocol pipes must not leak into processes a cell starts.
os.set_inheritable(3, False)
os.set_inheritable(4, False)
REQ = os.fdopen(3, "rb", buffering=0)
EV_FD = 4
_lock = threading.Lock()
DRIVER_PID = os.getpid()
current_id = 0
in_cell = False


def send(obj):
    body = json.dumps(obj, ensure_ascii=False, default=str).encode("utf-8", "replace")
    frame = str(len(body)).encode() + b"\n" + body
    with _lock:
        view = memoryview(frame)
        while view:
            n = os.write(EV_FD, view)
            view = view[n:]


def read_exact(n):
    chunks = []
    while n > 0:
        b = REQ.read(n)
        if not b:
            return None
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def read_request():
    line = b""
    while not line.endswith(b"\n"):
        c = REQ.read(1)
        if not c:
            return None
        line += c
        if len(line) > 24:
            raise ValueError("malformed frame header")
    body = read_exact(int(line))
    return None if body is None else json.loads(body)


MIME_METHODS = [
    ("text/html", "_repr_html_"), ("text/markdown", "_repr_markdown_"),
    ("image/svg+xml", "_repr_svg_"), ("image/png", "_repr_png_"),
    ("image/jpeg", "_repr_jpeg_"), ("application/json", "_repr_json_"),
    ("text/latex", "_repr_latex_"),
]


def mime_bundle(value):
    """text/plain always, plus what the object offers through _repr_*_."""
    bundle = {}
    for mime, meth in MIME_METHODS:
        fn = getattr(value, meth, None)
        if fn is None or isinstance(value, type):
            continue
        try:
            out = fn()
        except Exception:
            continue
        if out is None:
            continue
        if isinstance(out, tuple):  # (data, metadata)
            out = out[0]
        if isinstance(out, (bytes, bytearray)):
            out = base64.b64encode(bytes(out)).decode()
        elif mime == "application/json" and not isinstance(out, str):
            bundle[mime] = out
            continue
        bundle[mime] = str(out)
    try:
        bundle["text/plain"] = repr(value)
    except Exception as e:  # a broken __repr__ must not break the session
        bundle["text/plain"] = f"<unrepresentable {type(value).__name__}: {e}>"
    return bundle


def display(*objs):
    """Shows objects as rich output of the current cell (like IPython's)."""
    for obj in objs:
        send({"type": "display", "id": current_id, "mime": mime_bundle(obj)})


def emit_figures():
    mpl = sys.modules.get("corral_mpl")
    if mpl is not None and "matplotlib.pyplot" in sys.modules:
        mpl.flush_figures(lambda mime: send({"type": "display", "id": current_id, "mime": mime}))


namespace = {"__name__": "__main__", "__builtins__": __builtins__, "display": display}


def run_cell(cell_id, code):
    """Runs one cell; returns the done status."""
    filename = f"<cell-{cell_id}>"
    # tracebacks show the cell's source lines
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    tree = ast.parse(code, filename=filename, mode="exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, filename, "exec"), namespace)
    if last is not None:
        value = eval(compile(last, filename, "eval"), namespace)
        if value is not None:
            namespace["_"] = value
            send({"type": "result", "id": cell_id, "mime": mime_bundle(value)})


def format_error(exc):
    """The traceback without this driver's own frames."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def on_sigint(signum, frame):
    # between cells an interrupt means nothing; during one it stops the cell
    if in_cell:
        raise KeyboardInterrupt


def main():
    global current_id, in_cell
    signal.signal(signal.SIGINT, on_sigint)
    send({"type": "ready", "language": "python", "version": sys.version.split()[0]})
    while True:
        req = read_request()
        if req is None or req.get("type") == "shutdown":
            return
        rid = req.get("id", 0)
        if req.get("type") == "ping":
            send({"type": "pong", "id": rid})
            continue
        if req.get("type") != "execute":
            continue
        current_id = rid
        status = "ok"
        try:
            code = base64.b64decode(req.get("code_b64", "")).decode("utf-8", "replace")
            in_cell = True
            try:
                run_cell(rid, code)
            finally:
                in_cell = False
            emit_figures()
        except BaseException as exc:  # noqa: B902 - the cell's errors are reported, never fatal
            in_cell = False
            if os.getpid() != DRIVER_PID:
                os._exit(1)  # a process the cell forked must not become a second driver
            status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "error"
            text = format_error(exc)
            try:
                sys.stderr.write(text)
            except Exception:
                pass
            value = str(exc)
            if isinstance(exc, SystemExit):
                value = f"SystemExit({exc.code!r}): the cell called sys.exit; the session goes on"
            send({"type": "error", "id": rid, "name": type(exc).__name__, "value": value,
                  "traceback": text})
            try:
                emit_figures()
            except Exception:
                pass
        if os.getpid() != DRIVER_PID:
            os._exit(0)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        send({"type": "done", "id": rid, "status": status})


if __name__ == "__main__":
    main()
