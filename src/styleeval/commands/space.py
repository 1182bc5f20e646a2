"""``styleeval space``: the demo Space in a browser, from any installation (the same app as
``spaces/style_eval_demo/app.py``, which a wheel carries: :func:`styleeval.bundled.space_app`).

    styleeval space                                # http://127.0.0.1:7860, smollm2-135m: a real 135M chat model
    styleeval space --model 1b --data-dir ../shared/data --port 8080
    styleeval space --model tiny-random            # random weights: for trying the pipeline, not for numbers

The options set the Space's variables (``STYLEEVAL_MODEL``, ``STYLEEVAL_BASE_URL``...), which the app reads as it
does on the Hub.
"""

from __future__ import annotations

import argparse
import errno
import os
import runpy
import socket

from styleeval.bundled import space_app
from styleeval.errors import UserError
from styleeval.extras import require

SUMMARY = "the demo Space (Gradio) in a browser: score, compare, batch, meta-evaluation"
"""What ``styleeval --help`` says of this command."""

EPILOG = """\
Each option sets the variable the Space reads (as on a Hugging Face Space): --model STYLEEVAL_MODEL, --base-url
STYLEEVAL_BASE_URL, --tokenizer STYLEEVAL_TOKENIZER, --data-dir STYLEEVAL_DATA_DIR, --no-autorater
STYLEEVAL_AUTORATER=0, --metaeval-llm STYLEEVAL_METAEVAL_LLM=1, --host/--port GRADIO_SERVER_NAME/_PORT. A port in
use is one line, before anything loads. Needs the space extra (pip install 'styleeval[space]'). Stop it with Ctrl-C.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``space`` sub-command."""
    p = subparsers.add_parser("space", help=SUMMARY, epilog=EPILOG,
                              description="Run the styleeval demo Space (Gradio) on this machine.",
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None,
                   help="preset, Hub id, local folder or .gguf file (default: $STYLEEVAL_MODEL, else "
                   "smollm2-135m, a real 135M chat model fetched on first use, no Hub account; with --base-url, the "
                   "server's model; 1b, 3b, 8b: the paper's; tiny-random: random weights, nothing to download, not "
                   "for numbers)")
    p.add_argument("--base-url", default=None, help="score on an OpenAI-compatible server (vLLM) instead")
    p.add_argument("--tokenizer", default=None, help="tokenizer id or path (with --base-url)")
    p.add_argument("--data-dir", default=None,
                   help="local corpus mirror for the meta-evaluation tab (default: $STYLEEVAL_DATA_DIR or download)")
    p.add_argument("--no-autorater", action="store_true", help="no autorater ratings")
    p.add_argument("--metaeval-llm", action="store_true",
                   help="add LogProb's correlations to the meta-evaluation tab (computed once the Space listens; a GPU "
                   "is advised)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=7860, help="port (default: 7860)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``styleeval space`` until interrupted; returns the exit status."""
    require("gradio", "the Space")  # one line naming the extra, before anything starts
    check_port(args.host, args.port)  # one line naming the port and the flag, before the app loads (tens of seconds)
    settings = {"STYLEEVAL_MODEL": args.model, "STYLEEVAL_BASE_URL": args.base_url,
                "STYLEEVAL_TOKENIZER": args.tokenizer,
                "STYLEEVAL_DATA_DIR": os.path.abspath(args.data_dir) if args.data_dir else None,
                "STYLEEVAL_AUTORATER": "0" if args.no_autorater else None,
                "STYLEEVAL_METAEVAL_LLM": "1" if args.metaeval_llm else None,
                "GRADIO_SERVER_NAME": args.host, "GRADIO_SERVER_PORT": str(args.port)}
    os.environ.update({k: v for k, v in settings.items() if v is not None})
    try:
        runpy.run_path(str(space_app()), run_name="__main__")
    except OSError as err:  # taken while the app loaded: Gradio's advice names its variable, not our flag
        if "Cannot find empty port" not in str(err):
            raise
        raise UserError(_port_in_use(args.host, args.port)) from None
    return 0


def _port_in_use(host: str, port: int) -> str:
    return (f"port {port} on {host} is already in use (another Space or server?): choose a free one with --port, e.g. "
            f"--port {_free_port_after(host, port)}")


def _free_port_after(host: str, port: int) -> int | str:
    """The first port after ``port`` that can be bound on ``host`` (``N`` when none of the next 100 can)."""
    for candidate in range(port + 1, min(port + 101, 65536)):
        if _bind_error(host, candidate) is None:
            return candidate
    return "N"


def _bind_error(host: str, port: int) -> OSError | None:
    """Why ``port`` cannot be bound on ``host`` as Gradio binds it (``SO_REUSEADDR``: a port in TIME_WAIT is free);
    ``None`` when it can."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
    except OSError as err:  # socket.gaierror too
        return err
    return None


def check_port(host: str, port: int) -> None:
    """A :class:`~styleeval.errors.UserError` in one line when the Space could not listen on ``host``:``port``: the
    port in use (which flag to change, and a free port), or the address itself refused."""
    err = _bind_error(host, port)
    if err is None:
        return
    if err.errno == errno.EADDRINUSE:
        raise UserError(_port_in_use(host, port))
    raise UserError(f"cannot listen on {host}, port {port} ({err.strerror or err}): choose another --host (default "
                    "127.0.0.1) or --port")
