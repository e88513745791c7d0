"""matplotlib backend of corral's Python session driver.

The driver points MPLBACKEND at "module://corral_mpl" while a cell imports
matplotlib; the sandbox places this file beside the driver (/.corral/).
Figures render with Agg. plt.show() sends every open figure as a display
event (image/png + text/plain) and closes it; the driver calls
flush_figures() at the end of each cell for figures left open, as a
notebook's inline backend does.
"""

import base64
import io
import sys

from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

FigureCanvas = FigureCanvasAgg
FigureManager = FigureManagerBase


def figure_bundle(fig):
    """The MIME bundle of a figure. The figure leaves pyplot's list of open
    figures, so it is not sent a second time at the end of the cell; the
    Figure object itself stays usable."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close(fig)
    return {"image/png": base64.b64encode(buf.getvalue()).decode("ascii"),
            "text/plain": repr(fig)}


def _send(bundle):
    # The driver registers itself under this name; outside a session (the
    # module imported by hand) figures are rendered and dropped.
    session = sys.modules.get("_corral_session")
    if session is not None:
        session.display_bundle(bundle)


def flush_figures():
    """Sends every open pyplot figure, oldest first, and closes them all,
    even when one fails to render (it would fail again in every cell)."""
    import matplotlib.pyplot as plt
    try:
        for num in plt.get_fignums():
            _send(figure_bundle(plt.figure(num)))
    finally:
        plt.close("all")


def show(*args, **kwargs):
    # block= and other arguments mean nothing without a window
    flush_figures()
