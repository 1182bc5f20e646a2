"""Scale benchmarks (issue 28): memory and time against input size, resume, sharded clients, statistics.

    python scripts/bench_scale.py --out results/scale            # everything, a few minutes on 2 cores
    python scripts/bench_scale.py --only files --max-rows 1000000

Sections (each row of the output is one subprocess, so peak RSS is that run's own):
- files: ``run_file`` over 10^3..10^6 input rows with a cheap deterministic job (the runner's own cost: reading,
  validating, resuming, writing; a model's cost is per row and adds on top): peak RSS, time to the first written
  row, total time; and a resume with every row already finished, with its resume index (starts where the index
  says) and without it (every finished record checked against the input).
- throughput: ``styleeval score``'s client against an instant stub OpenAI-compatible server (answers in vLLM's format,
  no model): rows/s of one process, and of two ``--shard`` processes side by side, with the client's CPU time a row
  (user + system, every thread).
- compare: ``compare_systems`` on 3 systems x 10^4..10^6 rows (one mean metric): time and peak RSS.
- torn (only when asked: ``--only torn --torn-mb 640``): a resume after a torn write (OUT of about that many MB, its
  last record cut by a crash): peak RSS and time of the resume, in a process of its own.

Writes ``scale.json`` and ``scale.png`` (the curves) into --out.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

# ------------------------------------------------------------------------------------------- the stub server


@functools.cache
def _entry(token: int) -> str:
    return '{"' + str(token) + '":{"logprob":-1.5,"rank":1,"decoded_token":"t"}}'


def _completion(body: bytes) -> bytes:
    request = msgspec.json.decode(body)
    prompts = request["prompt"]
    if isinstance(prompts, str):
        prompts = [list(range(1, 2 + len(prompts) // 4))]
    elif prompts and isinstance(prompts[0], int):
        prompts = [prompts]
    choices = []
    for i, prompt in enumerate(prompts):
        logprobs = "[null," + ",".join(_entry(t) for t in prompt[1:]) + "]"
        choices.append(f'{{"index":{i},"text":"a","logprobs":null,"finish_reason":"length",'
                       f'"prompt_logprobs":{logprobs}}}')
    return ('{"id":"x","object":"text_completion","created":0,"model":"stub","choices":[' + ",".join(choices)
            + '],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}').encode()


MODELS = json.dumps({"object": "list", "data": [{"id": "stub", "object": "model", "root": "stub",
                                                  "max_model_len": 4096}]}).encode()


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while line := await reader.readline():
            _, path, _ = line.decode().split(" ", 2)
            length = 0
            while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = header.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            body = await reader.readexactly(length) if length else b""
            out = MODELS if path.endswith("/models") else _completion(body)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(out)
                         + out)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    writer.close()


def serve_stub(port: int) -> None:
    """Run the instant stub server on 127.0.0.1:port (blocks)."""
    async def main() -> None:
        server = await asyncio.start_server(_handle, "127.0.0.1", port, backlog=1024)
        print("ready", flush=True)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


# ------------------------------------------------------------------------------------------- one measurement


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _write_input(path: Path, rows: int) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(rows):
            f.write(json.dumps({"source": f"Give me the report number {i} now, and quickly please.",
                                "rewrite": f"Could you please send me report {i}? Thank you so much.",
                                "style": "polite", "source_id": f"s{i}"}) + "\n")


def measure_files(rows: int, tmp: Path) -> dict:
    """``run_file`` with a cheap job over ``rows`` input rows: fresh, then resumed when complete."""
    from styleeval.files import LOGPROB_RECORDS, FileJob, run_file
    from styleeval.files.resume import index_path

    class Lengths:
        signature = "lengths|v:1"

    first: list[float] = []
    start = 0.0

    def on_chunk(_records) -> None:
        if not first:
            first.append(time.perf_counter() - start)

    job = FileJob(LOGPROB_RECORDS, Lengths, lambda _s, chunk: [
        {"content": -len(r.rewrite) / 7, "style_strength": len(r.source) % 5 / 3} for r in chunk])
    inp, out = tmp / "in.jsonl", tmp / "out.jsonl"
    _write_input(inp, rows)
    hour_ago = time.time() - 3600  # an input written well before the run (the sampled index before issue 38
    # distrusted inputs modified less than 2 s before it: kept so that its numbers can be measured again)
    os.utime(inp, (hour_ago, hour_ago))
    base = _peak_mb()
    start = time.perf_counter()
    run_file(job, inp, out, progress=False, on_chunk=on_chunk, chunk_size=4096, flush_seconds=1.0)
    total = time.perf_counter() - start
    start = time.perf_counter()
    resumed = run_file(job, inp, out, progress=False)  # with the resume index: starts at the input's end
    resume = time.perf_counter() - start
    assert resumed.skipped == rows and resumed.scored == 0
    index_path(out).unlink()
    start = time.perf_counter()
    resumed = run_file(job, inp, out, progress=False)  # without it: every finished record checked
    full_check = time.perf_counter() - start
    assert resumed.skipped == rows and resumed.scored == 0
    return {"rows": rows, "first_row_s": first[0], "total_s": total, "resume_s": resume,
            "resume_full_check_s": full_check, "peak_mb": _peak_mb(), "start_mb": base}


TORN_TEXT = 1000
"""Characters of each source and rewrite in the torn-tail measurement (an OUT record of about 2 KB)."""


def prepare_torn(mb: int, tmp: Path) -> dict:
    """An input and a finished OUT of about ``mb`` MB (a cheap job), its last record then torn as by a crash."""
    from styleeval.files import LOGPROB_RECORDS, FileJob, run_file

    class Lengths:
        signature = "lengths|v:1"

    rows = mb * 1_000_000 // (2 * TORN_TEXT + 200)
    inp, out = tmp / "in.jsonl", tmp / "out.jsonl"
    with open(inp, "w", encoding="utf-8") as f:
        for i in range(rows):
            f.write(json.dumps({"source": f"{i} " + "s" * TORN_TEXT, "rewrite": f"{i} " + "r" * TORN_TEXT,
                                "style": "polite"}) + "\n")
    job = FileJob(LOGPROB_RECORDS, Lengths, lambda _s, chunk: [
        {"content": -len(r.rewrite) / 7, "style_strength": len(r.source) % 5 / 3} for r in chunk])
    run_file(job, inp, out, progress=False, chunk_size=4096, flush_seconds=1.0)
    with open(out, "rb+") as f:  # the last record cut halfway, as a crash mid-write leaves it
        f.truncate(f.seek(0, os.SEEK_END) - TORN_TEXT)
    return {"rows": rows, "out_mb": out.stat().st_size / 1e6}


def measure_torn(tmp: Path) -> dict:
    """The resume of :func:`prepare_torn`'s files: its peak RSS over the interpreter's, and its time."""
    from styleeval.files import LOGPROB_RECORDS, FileJob, run_file

    class Lengths:
        signature = "lengths|v:1"

    job = FileJob(LOGPROB_RECORDS, Lengths, lambda _s, chunk: [
        {"content": -len(r.rewrite) / 7, "style_strength": len(r.source) % 5 / 3} for r in chunk])
    base = _peak_mb()
    start = time.perf_counter()
    result = run_file(job, tmp / "in.jsonl", tmp / "out.jsonl", progress=False)
    assert result.scored == 1 and result.complete
    return {"resume_s": time.perf_counter() - start, "peak_mb": _peak_mb(), "start_mb": base}


def measure_client(rows: int, tmp: Path, port: int, shard: str | None = None) -> dict:
    """``score_file`` against the stub server at ``port``."""
    from styleeval.files import score_file
    from styleeval.random_weights import build_tokenizer

    tok = tmp / "tok"
    if not tok.exists():
        build_tokenizer().save_pretrained(tok)
    inp = tmp / "in.jsonl"
    if not inp.exists():
        _write_input(inp, rows)
    out = tmp / f"out{'' if shard is None else shard.replace('/', '-')}.jsonl"
    import transformers  # noqa: F401  imported before the clock starts: a long job pays Python's imports once

    start, cpu = time.perf_counter(), _cpu_seconds()
    result = score_file(inp, out, "stub", base_url=f"http://127.0.0.1:{port}/v1", tokenizer=str(tok), progress=False,
                        shard=shard, max_concurrency=8)
    seconds, cpu = time.perf_counter() - start, _cpu_seconds() - cpu
    return {"rows": result.scored, "seconds": seconds, "rows_per_s": result.scored / seconds,
            "client_cpu_ms_per_row": 1000 * cpu / max(1, result.scored), "peak_mb": _peak_mb()}


def _cpu_seconds() -> float:
    """User + system CPU time of this process, every thread included."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure_compare(rows: int, systems: int = 3) -> dict:
    """``compare_systems`` on ``systems`` x ``rows`` rows of one mean metric."""
    import numpy as np
    import pandas as pd

    from styleeval.systems.comparison import compare_systems

    rng = np.random.default_rng(0)
    scores = pd.concat([pd.DataFrame({"row": np.arange(rows) + k * rows, "system": f"sys{k}",
                                      "source_id": np.arange(rows).astype(str), "m": rng.normal(0.01 * k, 1, rows)})
                        for k in range(systems)], ignore_index=True)
    base = _peak_mb()
    start = time.perf_counter()
    compare_systems(scores, {"m": "m|bench"})
    return {"rows": rows, "systems": systems, "seconds": time.perf_counter() - start, "peak_mb": _peak_mb(),
            "start_mb": base}


# ------------------------------------------------------------------------------------------- the driver


def _child(section: str, rows: int, extra: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", section, str(rows), *extra], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--stub":
        serve_stub(int(sys.argv[2]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        section, rows = sys.argv[2], int(sys.argv[3])
        with tempfile.TemporaryDirectory() as tmp:
            if section == "files":
                result = measure_files(rows, Path(tmp))
            elif section == "torn-prepare":
                result = prepare_torn(rows, Path(sys.argv[4]))
            elif section == "torn-resume":
                result = measure_torn(Path(sys.argv[4]))
            elif section == "throughput":
                result = measure_client(rows, Path(sys.argv[5]), int(sys.argv[4]),
                                        sys.argv[6] if len(sys.argv) > 6 else None)
            else:
                result = measure_compare(rows)
        print(json.dumps(result))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="results/scale")
    parser.add_argument("--only", choices=("files", "throughput", "compare", "torn"), action="append")
    parser.add_argument("--torn-mb", type=int, default=640, help="OUT's size in the torn-tail measurement (MB)")
    parser.add_argument("--max-rows", type=int, default=1_000_000)
    parser.add_argument("--client-rows", type=int, default=8_000)
    args = parser.parse_args()
    sections = args.only or ["files", "throughput", "compare"]
    results: dict = {}
    sizes = [n for n in (1_000, 10_000, 100_000, 1_000_000) if n <= args.max_rows]
    if "files" in sections:
        results["files"] = []
        for n in sizes:
            results["files"].append(_child("files", n, []))
            print("files", results["files"][-1], flush=True)
    if "throughput" in sections:
        port = _free_port()
        stub = subprocess.Popen([sys.executable, __file__, "--stub", str(port)], stdout=subprocess.PIPE, text=True)
        try:
            stub.stdout.readline()
            with tempfile.TemporaryDirectory() as tmp:
                one = _child("throughput", args.client_rows, [str(port), tmp])
            with tempfile.TemporaryDirectory() as tmp:
                _child("throughput", 10, [str(port), tmp])  # the input and tokenizer, once
                (Path(tmp) / "in.jsonl").unlink()
                _write_input(Path(tmp) / "in.jsonl", args.client_rows)
                start = time.perf_counter()
                procs = [subprocess.Popen([sys.executable, __file__, "--child", "throughput", str(args.client_rows),
                                           str(port), tmp, f"{k}/2"], stdout=subprocess.PIPE, text=True)
                         for k in range(2)]
                outs = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
                seconds = time.perf_counter() - start
            slowest = max(o["seconds"] for o in outs)  # each process's own scoring time, start-up left out as above
            results["throughput"] = {"one_process": one, "two_shards": {
                "rows": sum(o["rows"] for o in outs), "seconds": slowest, "wall_with_startup_s": seconds,
                "rows_per_s": sum(o["rows"] for o in outs) / slowest,
                "client_cpu_ms_per_row": sum(o["client_cpu_ms_per_row"] * o["rows"] for o in outs)
                / max(1, sum(o["rows"] for o in outs))}}
            print("throughput", results["throughput"], flush=True)
        finally:
            stub.kill()
    if "torn" in sections:
        with tempfile.TemporaryDirectory() as tmp:  # the resume in a process of its own, started from this small one
            results["torn"] = {**_child("torn-prepare", args.torn_mb, [tmp]), **_child("torn-resume", 0, [tmp])}
        print("torn", results["torn"], flush=True)
    if "compare" in sections:
        results["compare"] = []
        for n in [n for n in (10_000, 100_000, 500_000, 1_000_000) if n <= args.max_rows]:
            results["compare"].append(_child("compare", n, []))
            print("compare", results["compare"][-1], flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "scale.json").write_text(json.dumps(results, indent=2))
    _plot(results, out / "scale.png")
    print(f"-> {out / 'scale.json'}, {out / 'scale.png'}")


def _plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    if results.get("files"):
        rows = [r["rows"] for r in results["files"]]
        ax = axes[0]
        ax.plot(rows, [r["peak_mb"] for r in results["files"]], "o-", label="score: peak RSS (MB)")
        ax2 = ax.twinx()
        ax2.plot(rows, [r["first_row_s"] for r in results["files"]], "s--", color="C1", label="time to first row (s)")
        ax2.plot(rows, [r["resume_s"] for r in results["files"]], "^:", color="C2", label="resume, all done (s)")
        ax2.plot(rows, [r["resume_full_check_s"] for r in results["files"]], "v:", color="C3",
                 label="resume without its index (s)")
        ax.set(xscale="log", xlabel="input rows", ylabel="peak RSS (MB)", title="styleeval score (runner)")
        ax2.set_ylabel("seconds")
        lines = ax.get_lines() + ax2.get_lines()
        ax.legend(lines, [line.get_label() for line in lines], fontsize=8, loc="upper left")
    if results.get("compare"):
        rows = [r["rows"] for r in results["compare"]]
        ax = axes[1]
        ax.plot(rows, [r["seconds"] for r in results["compare"]], "o-", label="time (s)")
        ax.plot(rows, [r["peak_mb"] for r in results["compare"]], "s--", label="peak RSS (MB)")
        ax.set(xscale="log", yscale="log", xlabel="rows per system", title="compare_systems, 3 systems")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
