"""corral's Python session driver. The contract is docs/session-protocol.md.

The supervisor starts it as `python3 -u /.corral/driver.py`: fd 0 is
/dev/null, fds 1 and 2 carry the cells' own output unframed, fd 3 brings
requests and fd 4 takes events. Cells run one at a time in one persistent
namespace, the module __main__, so definitions, imports and pickling of
classes defined in cells work as in a notebook.

Standard library only. matplotlib, when a cell imports it, is pointed at
corral_mpl (beside this file), which turns figures into display events.
"""

import ast
import base64
import importlib.machinery
import json
import linecache
import os
import signal
import sys
import threading
import traceback
import types

REQ_FD, EV_FD = 3, 4
MAX_FRAME = 64 << 20            # the protocol's limit, both directions
MAX_TEXT = 2 << 20              # a text/plain repr longer than this is cut
CO_COROUTINE = 0x80             # inspect.CO_COROUTINE, without importing inspect
DRIVER_FILE = __file__
DRIVER_PID = os.getpid()

# Processes a cell starts must not hold the protocol pipes: a leftover
# background child would keep the event pipe open after the driver died.
os.set_inheritable(REQ_FD, False)
os.set_inheritable(EV_FD, False)


class Fatal(Exception):
    """The supervisor spoke nonsense: the driver exits and gets restarted."""


class State:
    cell_id = None          # the running cell's id, None between cells
    running = False         # SIGINT raises KeyboardInterrupt only while True
    sending = False         # the main thread is writing a frame
    pending_sigint = False  # a SIGINT that arrived while sending
    sigint_seen = False     # a SIGINT arrived during this cell


state = State()
send_lock = threading.Lock()


def frame(event):
    # Lone surrogates (possible in user strings) are not valid UTF-8 and
    # would make the supervisor's JSON parser reject the frame: "replace".
    body = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    body = body.encode("utf-8", "replace")
    if len(body) > MAX_FRAME - 16 and "mime" in event:
        note = f"<a {len(body)}-byte output, over the 64 MiB frame limit, was dropped>"
        return frame(dict(event, mime={"text/plain": note}))
    return b"%d\n" % len(body) + body


def send(event):
    """Writes one event frame. Threads in cells may display too, hence the
    lock; a KeyboardInterrupt in the middle of a frame would corrupt the
    stream, so a SIGINT that arrives while the main thread writes is held
    back until the frame is out."""
    if os.getpid() != DRIVER_PID:
        return  # a process the cell forked speaks for nobody
    data = memoryview(frame(event))
    main = threading.current_thread() is threading.main_thread()
    with send_lock:
        if main:
            state.sending = True
        try:
            while data:
                data = data[os.write(EV_FD, data):]
        finally:
            if main:
                state.sending = False
    if main and state.pending_sigint:
        state.pending_sigint = False
        if state.running:
            raise KeyboardInterrupt


def on_sigint(signum, frame_):
    if not state.running:
        return  # between cells there is nothing to stop
    state.sigint_seen = True
    if state.sending:
        state.pending_sigint = True
        return
    raise KeyboardInterrupt


class Requests:
    """Reads request frames from fd 3."""

    def __init__(self, fd):
        self.fd, self.buf = fd, bytearray()

    def _fill(self, want):
        chunk = os.read(self.fd, max(want, 1 << 16))
        if not chunk:
            raise EOFError
        self.buf += chunk

    def next(self):
        while b"\n" not in self.buf:
            if len(self.buf) > 9:
                raise Fatal("frame header is not a length")
            self._fill(1)
        nl = self.buf.index(b"\n")
        head = bytes(self.buf[:nl])
        if not head.isdigit() or int(head) > MAX_FRAME:
            raise Fatal(f"bad frame length {head[:12]!r}")
        end = nl + 1 + int(head)
        while len(self.buf) < end:
            self._fill(end - len(self.buf))
        body = bytes(self.buf[nl + 1:end])
        del self.buf[:end]
        try:
            req = json.loads(body)
        except ValueError as e:
            raise Fatal(f"frame body is not JSON: {e}") from None
        if not isinstance(req, dict) or not isinstance(req.get("id"), int):
            raise Fatal("request without an id")
        return req


# ---- rich output --------------------------------------------------------

REPR_METHODS = (
    ("_repr_html_", "text/html"), ("_repr_markdown_", "text/markdown"),
    ("_repr_svg_", "image/svg+xml"), ("_repr_png_", "image/png"),
    ("_repr_jpeg_", "image/jpeg"), ("_repr_json_", "application/json"),
    ("_repr_latex_", "text/latex"),
)


def mime_value(mime, data):
    """A repr method's output as the protocol carries it, or None."""
    if isinstance(data, tuple) and len(data) == 2:
        data = data[0]  # IPython's (data, metadata) form
    if data is None:
        return None
    binary = mime.startswith("image/") and mime != "image/svg+xml"
    if binary and isinstance(data, (bytes, bytearray)):
        return base64.b64encode(data).decode("ascii")
    if mime == "application/json" or mime.endswith("+json"):
        # Sent as JSON text, like every other text type: a MIME value is
        # always a string.
        return data if isinstance(data, str) else json.dumps(data, default=str)
    if isinstance(data, (bytes, bytearray)):
        return bytes(data).decode("utf-8", "replace")
    return data if isinstance(data, str) else None  # str already (base64 for images)


def call_repr(obj, name, *args):
    try:
        method = getattr(obj, name, None)
        return method(*args) if callable(method) else None
    except Exception:  # a broken repr method costs its MIME type, not the cell
        return None


def mime_bundle(obj):
    # Everything but text/plain comes from the object's own methods, and
    # what they return is the cell's too (a dict whose keys' __str__ raises,
    # a tuple whose __len__ raises): what fails costs its MIME type, not the
    # cell. Types are tested on type(x): isinstance() would also read x's
    # __class__, which may be a property that raises.
    bundle = {}
    # a class's _repr_html_ is an unbound function, not the class's repr
    if not issubclass(type(obj), type):
        try:
            extra = call_repr(obj, "_repr_mimebundle_")
            if issubclass(type(extra), tuple):
                extra = extra[0]
            items = list(extra.items()) if issubclass(type(extra), dict) else []
        except Exception:
            items = []
        for mime, data in items:
            try:
                value = mime_value(str(mime), data)
                if value is not None:
                    bundle[str(mime)] = value
            except Exception:
                pass
        for name, mime in REPR_METHODS:
            if mime not in bundle:
                try:
                    value = mime_value(mime, call_repr(obj, name))
                except Exception:
                    value = None
                if value is not None:
                    bundle[mime] = value
        figure = sys.modules.get("matplotlib.figure")
        if figure is not None and issubclass(type(obj), figure.Figure):
            import corral_mpl
            bundle.update(corral_mpl.figure_bundle(obj))
    try:
        text = repr(obj)
    except Exception as e:
        why = readable(lambda: repr(e), UNDISPLAYABLE)
        text = f"<{type_name(obj)} object; its repr failed: {why}>"
    bundle["text/plain"] = cut(text)
    return bundle


def display_bundle(bundle):
    if state.cell_id is not None:  # a thread outliving its cell has no cell
        send({"type": "display", "id": state.cell_id, "mime": bundle})


def display(*objs):
    """Shows objects as rich output of the running cell, like IPython's."""
    for obj in objs:
        display_bundle(mime_bundle(obj))


def flush_figures():
    if "matplotlib.pyplot" in sys.modules:
        import corral_mpl
        corral_mpl.flush_figures()


class MatplotlibBackend:
    """Sets MPLBACKEND only while matplotlib's package imports, which is
    when matplotlib reads it. Left in the environment it would reach
    programs a cell starts, and their matplotlib could not import
    corral_mpl. A backend chosen by the user (MPLBACKEND, matplotlib.use)
    wins."""

    def find_spec(self, name, path=None, target=None):
        if name != "matplotlib" or "MPLBACKEND" in os.environ:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not hasattr(spec.loader, "exec_module"):
            return spec
        real_exec = spec.loader.exec_module

        def exec_module(module):
            os.environ["MPLBACKEND"] = "module://corral_mpl"
            try:
                real_exec(module)
            finally:
                os.environ.pop("MPLBACKEND", None)

        spec.loader.exec_module = exec_module
        return spec


# ---- cells --------------------------------------------------------------

namespace = types.ModuleType("__main__")
namespace.display = display
asyncio_loop = None


def run_code(code):
    """Runs a compiled piece of a cell; a cell with top-level await compiles
    to a coroutine, run on one event loop kept for the session."""
    global asyncio_loop
    if not code.co_flags & CO_COROUTINE:
        return eval(code, namespace.__dict__)
    import asyncio
    if asyncio_loop is None:
        asyncio_loop = asyncio.new_event_loop()
    task = asyncio_loop.create_task(eval(code, namespace.__dict__))
    try:
        return asyncio_loop.run_until_complete(task)
    except BaseException:
        task.cancel()  # an interrupted cell must not resume in the next one
        raise


def silenced(lines, node):
    """A trailing ';' hides the value, as in IPython."""
    line = lines[node.end_lineno - 1].encode("utf-8")
    return line[node.end_col_offset:].decode("utf-8", "replace").lstrip().startswith(";")


def run_cell(source):
    filename = f"<cell-{state.cell_id}>"
    # Tracebacks read source lines through linecache; mtime None keeps the
    # entry from being dropped by linecache.checkcache(). Lines end at "\n"
    # only, as the compiler counts them.
    lines = source.split("\n")
    linecache.cache[filename] = (len(source), None, [ln + "\n" for ln in lines], filename)
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = compile(source, filename, "exec", ast.PyCF_ONLY_AST | flags)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr) and not silenced(lines, tree.body[-1]):
        last = tree.body.pop().value
    run_code(compile(tree, filename, "exec", flags))
    bundle = None
    if last is not None:
        value = run_code(compile(ast.Expression(last), filename, "eval", flags))
        if value is not None:
            bundle = mime_bundle(value)
    flush_figures()
    if bundle is not None:
        send({"type": "result", "id": state.cell_id, "mime": bundle})


def prune(te, seen):
    """Drops this driver's frames (the exec at the bottom, the SIGINT
    handler at the top) and whatever ran the cell's coroutine from a
    traceback and the exceptions chained to it."""
    if te is None or id(te) in seen:
        return
    seen.add(id(te))
    frames = [f for f in te.stack if f.filename != DRIVER_FILE]
    first = next((i for i, f in enumerate(frames) if f.filename.startswith("<cell-")), 0)
    te.stack = traceback.StackSummary.from_list(frames[first:])
    for sub in [te.__cause__, te.__context__] + list(getattr(te, "exceptions", None) or []):
        prune(sub, seen)


UNDISPLAYABLE = "<an exception that cannot be displayed>"


def readable(read, fallback):
    """read() as a plain str, or fallback. Reading an exception runs the
    cell's code (__str__, properties such as __notes__ or __cause__, a
    metaclass's __name__), which may raise anything, SystemExit and
    KeyboardInterrupt included (no real SIGINT is raised here: the cell is
    over), or return a str subclass whose own methods raise later."""
    try:
        text = read()
        if isinstance(text, str):
            return "".join((text,))  # an exact str, whatever the subclass
    except BaseException:
        pass
    return fallback


def type_name(obj):
    """The name of obj's class as the interpreter knows it: a metaclass may
    turn __name__ into anything."""
    return type.__dict__["__name__"].__get__(type(obj))


def format_error(exc):
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__, compact=True)
    prune(te, set())
    return "".join(te.format())


def bare_traceback(exc, name):
    """The frames alone, for an exception that cannot be formatted: read
    through BaseException's own descriptor, not the cell's properties."""
    tb = BaseException.__dict__["__traceback__"].__get__(exc)
    frames = [f for f in traceback.extract_tb(tb) if f.filename != DRIVER_FILE]
    first = next((i for i, f in enumerate(frames) if f.filename.startswith("<cell-")), 0)
    return ("Traceback (most recent call last):\n" + "".join(traceback.format_list(frames[first:]))
            + f"{name}: {UNDISPLAYABLE}\n")


def report_error(exc):
    """Never raises: the cell must end with "done", or the supervisor waits
    for it and then kills the driver, with the session's state."""
    name = type_name(exc)
    text = readable(lambda: format_error(exc), None)
    if text is None:
        text = readable(lambda: bare_traceback(exc, name), f"{name}: {UNDISPLAYABLE}\n")
    flush_streams()
    write_fd(2, text.encode("utf-8", "replace"))
    value = readable(lambda: str(exc), f"<{name}; its str() failed>")
    send({"type": "error", "id": state.cell_id, "name": name,
          "value": cut(value), "traceback": cut(text)})


def cut(text):
    if len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT // 2] + f"\n... [{len(text) - MAX_TEXT} characters] ...\n" + text[-MAX_TEXT // 2:]


def write_fd(fd, data):
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        pass  # nobody reads the cell's stderr any more: the event still goes


def flush_streams():
    """Everything the cell printed reaches the pipes before "done"."""
    # BaseException: a cell's own sys.stdout may raise anything from flush
    for stream in {id(s): s for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)}.values():
        try:
            stream.flush()
        except BaseException:
            pass
    if "ctypes" in sys.modules:  # C code the cell called may buffer in stdio
        try:
            sys.modules["ctypes"].CDLL(None).fflush(None)
        except BaseException:
            pass


def leave_child(code):
    """A child the cell forked (os.fork) that ran to the end of the cell
    exits there: it must not become a second driver reading requests."""
    flush_streams()
    os._exit(code)


def execute(req):
    state.cell_id = req["id"]
    state.sigint_seen = False
    status = "ok"
    try:
        source = base64.b64decode(req.get("code_b64", ""), validate=True).decode("utf-8", "replace")
    except ValueError as e:
        raise Fatal(f"code_b64 is not base64: {e}") from None
    try:
        try:
            state.running = True
            run_cell(source)
        finally:
            state.running = False
    except BaseException as exc:  # the cell's errors, sys.exit included, end the cell only
        if os.getpid() != DRIVER_PID:
            leave_child(1)
        # issubclass of the real type: isinstance() would read the
        # exception's __class__, which the cell may have made a property
        interrupted = issubclass(type(exc), KeyboardInterrupt) or state.sigint_seen
        status = "interrupted" if interrupted else "error"
        report_error(exc)
        try:
            flush_figures()  # the figures of a failed cell are shown too
        except BaseException:
            pass
    if os.getpid() != DRIVER_PID:
        leave_child(0)
    flush_streams()
    send({"type": "done", "id": state.cell_id, "status": status})
    state.cell_id = None


def main():
    # Cells see an interactive interpreter's view: the working directory
    # first on sys.path, no script arguments. corral_mpl sits beside this
    # file, last so that it shadows nothing.
    here = os.path.dirname(os.path.abspath(DRIVER_FILE))
    if sys.path and sys.path[0] == here:
        del sys.path[0]
    sys.path.insert(0, "")
    sys.path.append(here)
    sys.argv = [""]
    sys.meta_path.insert(0, MatplotlibBackend())
    sys.modules["_corral_session"] = sys.modules[__name__]
    sys.modules["__main__"] = namespace
    for stream in (sys.stdout, sys.stderr):
        # output streams line by line as it is printed, one write per line
        # (with -u alone, print() writes the text and its newline separately)
        stream.reconfigure(line_buffering=True, write_through=False)
    signal.signal(signal.SIGINT, on_sigint)

    version = "%d.%d.%d" % sys.version_info[:3]
    send({"type": "ready", "language": "python", "version": version})
    requests = Requests(REQ_FD)
    while True:
        try:
            req = requests.next()
        except EOFError:
            return 0  # the supervisor is gone
        except Fatal as e:
            write_fd(2, f"corral python driver: {e}\n".encode())
            return 2
        kind = req.get("type")
        if kind == "execute":
            try:
                execute(req)
            except Fatal as e:
                write_fd(2, f"corral python driver: {e}\n".encode())
                return 2
        elif kind == "ping":
            send({"type": "pong", "id": req["id"]})
        elif kind == "shutdown":
            return 0
        else:
            write_fd(2, f"corral python driver: unknown request {kind!r}\n".encode())
            return 2


if __name__ == "__main__":
    code = main()
    flush_streams()
    # Not sys.exit: the interpreter would wait for threads the cells left running.
    os._exit(code)
