"""Train SmolLM2-135M-Instruct to write informal sentences formally, with LogProb as the reward (TRL's GRPO, LoRA).

The check of issue 49: a real, small training run on CPU, and independent measures that the reward was not gamed.

    python scripts/train_grpo_formality.py --data-dir ../shared/data --out runs/grpo-formality
    python scripts/train_grpo_formality.py --data-dir ../shared/data --out runs/smoke --smoke   # minutes: try it first

Data: Lai et al.'s 80 informal GYAFC sentences (Family & Relationships): every fourth one (20) held out, the other
60 trained on, with the formality rows' sources of the style-gap test set. The policy is the smollm2-135m preset
(the real-weights GGUF, converted once into the cache), with LoRA adapters (peft); the reward is
:class:`styleeval.rewards.LogProbReward` on the same preset (a second copy of the weights, frozen).

Before and after, on the 20 held-out sentences (greedy decoding): the reward and its two terms; independent checks
that it was not gamed: BLEU to Lai's human formal reference (one per sentence: r_bleu), S-chrF / S-BLEU to the source and exact
copies (copying), length, the autorater's 1-5 meaning and style ratings (the same 135M model in expected mode:
near chance on this model, docs/reproduction.md: reported, not trusted); the 10 first held-out examples. Written to
OUT/report.md and OUT/results.json (docs/training.md quotes them) as the run goes: after the first measurement, after
every training step (the log so far, the step reached) and at the end, each file replaced whole (a killed run leaves
the last one); LoRA checkpoints every --save-steps steps in OUT/trainer/checkpoint-<step> (TRL's save_steps), the
final adapter in OUT/adapter.

``--smoke`` is the same pipeline small (SMOKE: 2 steps on 4 sentences, 2 completions of at most 12 tokens, 2
held-out rows, no autorater, a checkpoint every step): to check an installation in minutes before a real run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import time
from pathlib import Path

from styleeval.logprob.metric import GUARDS

ROOT = Path(__file__).resolve().parents[1]
INSTRUCTION = "Rewrite the following sentence in a formal style. Reply with the rewritten sentence only.\n\n{source}"
CHECKS = ("r_bleu", "s_chrf", "s_bleu")
STEP_SECONDS = "8.8 s quiet (150 in 21.9 min) to 220 s on a loaded machine"
"""One step of the real run (2 prompts x 4 completions of up to 40 tokens) as measured: docs/training.md."""
SMOKE_MINUTES = "took 4.0 min with 1 thread and 10.4 min with 2 at a load of 8-13"
"""The whole ``--smoke`` run as measured (docs/training.md, "Try it first")."""
FULL = {"steps": 150, "train_rows": None, "generations": 4, "prompts_per_step": 2, "max_completion_length": 40,
        "eval_rows": None, "logging_steps": 5, "save_steps": 25}
"""The real run's settings (docs/training.md): every sentence, 150 steps."""
SMOKE = {"steps": 2, "train_rows": 4, "generations": 2, "prompts_per_step": 1, "max_completion_length": 12,
         "eval_rows": 2, "logging_steps": 1, "save_steps": 1}
"""``--smoke``: the pipeline end to end in minutes (no autorater); an option given on the command line wins."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=os.environ.get("STYLEEVAL_DATA_DIR"),
                        help="the corpus mirror (default: $STYLEEVAL_DATA_DIR, else downloaded)")
    parser.add_argument("--out", type=Path, required=True,
                        help="a folder for report.md, results.json, trainer/ (checkpoints) and adapter/")
    parser.add_argument("--smoke", action="store_true",
                        help="a smoke run: 2 steps on 4 sentences, 2 held-out rows, no autorater (the whole script "
                             f"{SMOKE_MINUTES} on 2 CPU cores, measured); the options below override it")
    parser.add_argument("--steps", type=int, help=f"GRPO steps (default {FULL['steps']}; one step took "
                        f"{STEP_SECONDS} on 2 CPU cores, measured: try --smoke first)")
    parser.add_argument("--train-rows", type=int, help="train on the first N sentences (default: all 110)")
    parser.add_argument("--generations", type=int, help=f"completions per prompt, GRPO's group (default "
                        f"{FULL['generations']})")
    parser.add_argument("--prompts-per-step", type=int, help=f"default {FULL['prompts_per_step']}")
    parser.add_argument("--max-completion-length", type=int, help=f"default {FULL['max_completion_length']}")
    parser.add_argument("--learning-rate", type=float, default=5e-4, help="default 5e-4")
    parser.add_argument("--lora-rank", type=int, default=16, help="default 16")
    parser.add_argument("--style-weight", type=float, default=None, help="the reward's (default: its own default)")
    parser.add_argument("--guard", choices=GUARDS, default=None,
                        help="the guarded reward (LogProbReward(guard=...): 'prompt', a completion the prompt explains "
                             "at least as well as the source gets the floor; 'repeat', a completion that repeats "
                             "itself does; 'prompt+repeat', both; docs/training.md, 'The hole, measured, and the prompt guard' and 'The repeat "
                             "guard'); the held-out checks report plain LogProb beside it")
    parser.add_argument("--beta", type=float, default=0.0,
                        help="GRPO's KL penalty to the untrained model (TRL's default 0: none, no reference pass)")
    parser.add_argument("--mask-truncated", action="store_true",
                        help="leave completions cut at --max-completion-length out of the loss (TRL's "
                             "mask_truncated_completions)")
    parser.add_argument("--logging-steps", type=int, help=f"TRL's log every N steps (default {FULL['logging_steps']})")
    parser.add_argument("--save-steps", type=int, help="a LoRA checkpoint in OUT/trainer/ every N steps (TRL's "
                        f"save_steps; default {FULL['save_steps']})")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch's CPU threads (default: 1 where the machine is busier than it has cores, by its "
                             "load average, else torch's own: one per core). At a load of 10 on 2 cores a forward "
                             "and backward pass of the 135M model took 207 s with 2 threads and 35 s with 1 "
                             "(measured: threads that wait for each other spin)")
    parser.add_argument("--train-dtype", choices=("auto", "float32", "bfloat16"), default="auto",
                        help="the policy's training precision (TRL's bf16 autocast, its default, or float32). auto: "
                             "bfloat16 where the CPU computes it natively (AMX or AVX512-BF16 in /proc/cpuinfo), else "
                             "float32: on an AVX2-only CPU (an AMD EPYC here) the bf16 backward ran through torch's "
                             "reference gemm, a GRPO step 200 s instead of about 20 (measured, py-spy)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run in OUT (killed, or its machine gone) from its last checkpoint: the "
                             "same options as the run's own (results.json says them; --threads may differ), the "
                             "measurement before training read back, the steps after the last checkpoint trained "
                             "again (TRL's resume_from_checkpoint: optimizer, scheduler and random states restored)")
    parser.add_argument("--seed", type=int, default=0, help="default 0")
    parser.add_argument("--no-autorater", action="store_true", help="skip the autorater's ratings (faster; --smoke "
                        "skips them)")
    parser.add_argument("--eval-rows", type=int, default=None, help="measure the first N held-out rows (default: 20)")
    args = parser.parse_args(argv)
    for name, value in (SMOKE if args.smoke else FULL).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    args.no_autorater = args.no_autorater or args.smoke
    return args


def native_bf16() -> bool:
    """Whether this CPU computes bfloat16 matmuls natively (AMX or AVX512-BF16 among /proc/cpuinfo's flags; on a
    machine without that file, False: float32, the safe choice)."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").split()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


def train_dtype(choice: str) -> str:
    """The policy's training precision: ``choice``, or for ``auto`` bfloat16 where the CPU has it natively, else
    float32.

    >>> train_dtype("float32"), train_dtype("auto") in ("float32", "bfloat16")
    ('float32', True)
    """
    return choice if choice != "auto" else ("bfloat16" if native_bf16() else "float32")


def busy_machine_threads() -> int | None:
    """1 where the machine's 1-minute load average is at least its number of cores (other jobs hold them: torch's
    threads would spin waiting for each other, several times slower; docs/training.md), else ``None`` (torch's
    default); said on stderr."""
    try:
        load, cores = os.getloadavg()[0], os.cpu_count() or 1
    except OSError:  # no load average on this system
        return None
    if load < cores:
        return None
    print(f"the machine is busy (load {load:.1f} on {cores} cores): 1 torch thread (--threads N to choose)",
          file=sys.stderr)
    return 1


def formality_sources(data_dir: str | None) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(training sources, held-out (source, references) pairs): Lai's 80 informal sentences, every fourth held out,
    plus the test set's formality sources for training."""
    from styleeval import load_corpus

    lai = load_corpus("lai_formality", data_dir=data_dir)
    by_source: dict[str, tuple[str, list[str]]] = {}
    for row in lai:
        by_source.setdefault(row["source_id"], (row["source"], list(row["reference"] or [])))
    ordered = [by_source[k] for k in sorted(by_source, key=int)]
    held_out = ordered[::4]
    train = [source for k, (source, _) in enumerate(ordered) if k % 4]
    testset = load_corpus("style_gap_testset", data_dir=data_dir)
    train += sorted({row["source"] for row in testset if row["target_style"] == "formal"})
    return train, held_out


def policy_folder() -> Path:
    """The smollm2-135m preset as a transformers folder (fetched and converted once into styleeval's cache)."""
    from styleeval.gguf_files import REAL_WEIGHTS
    from styleeval.models import model_source

    return Path(model_source(REAL_WEIGHTS))


def generate(model, tokenizer, sources: list[str], max_new_tokens: int) -> list[str]:
    """Greedy rewrites, one prompt at a time (no padding: nothing depends on batch-mates)."""
    import torch

    out = []
    for source in sources:
        ids = tokenizer.apply_chat_template([{"role": "user", "content": INSTRUCTION.format(source=source)}],
                                            add_generation_prompt=True, return_tensors="pt", return_dict=True)
        with torch.no_grad():
            done = model.generate(**ids, max_new_tokens=max_new_tokens, do_sample=False,
                                  pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id)
        out.append(tokenizer.decode(done[0, ids["input_ids"].shape[1]:], skip_special_tokens=True).strip())
    return out


def measure(rewrites: list[str], held_out: list[tuple[str, list[str]]], reward, autorater: bool) -> dict:
    """Mean of every check over the held-out rows (each row's values kept too)."""
    from styleeval.metrics import get_metric

    sources = [s for s, _ in held_out]
    references = [refs for _, refs in held_out]
    rows: dict[str, list[float]] = {}
    scores = plain_logprob(reward).score(sources, rewrites, "formal")  # the evaluation metric, unguarded
    rows["logprob_content"], rows["logprob_style"] = scores.content, scores.style_strength
    rows["reward"] = reward(prompts=sources, completions=rewrites, source=sources, style=["formal"] * len(sources))
    if reward.logprob.guard:
        guarded = reward.logprob.score(sources, rewrites, "formal")
        rows["floored_by_the_guard"] = [float(c == -math.inf) for c in guarded.content]
    for name in CHECKS:
        rows[name] = get_metric(name).compute(sources, rewrites, references=references)
    rows["copies"] = [float(r.strip() == s.strip()) for s, r in zip(sources, rewrites, strict=True)]
    rows["words"] = [float(len(r.split())) for r in rewrites]
    rows["source_words"] = [float(len(s.split())) for s in sources]
    if autorater:
        from styleeval.autorater import Autorater

        judge = Autorater(backend=reward.logprob.backend, mode="expected", progress=False)
        ratings = judge.rate(sources, rewrites, "formal")
        rows["autorater_meaning"], rows["autorater_style"] = ratings.meaning, ratings.style
    means = {k: statistics.fmean(v for v in vs if not math.isnan(v)) for k, vs in rows.items()}
    return {"means": means, "rows": rows, "rewrites": rewrites}


def reward_options(args: argparse.Namespace) -> dict:
    """The keywords of the run's :class:`~styleeval.rewards.LogProbReward` beside its model.

    >>> reward_options(parse_args(["--out", "x", "--guard", "prompt", "--style-weight", "10"]))
    {'style_weight': 10.0, 'guard': 'prompt'}
    >>> reward_options(parse_args(["--out", "x"]))
    {}
    """
    options: dict = {} if args.style_weight is None else {"style_weight": args.style_weight}
    return options | ({"guard": args.guard} if args.guard else {})


def plain_logprob(reward):
    """Plain LogProb (the evaluation metric) on the reward's backend: the reward's own scorer unless it is guarded,
    else one that reads as it does but for the guard (a row too long for the context skipped, NaN, as the reward's
    own scorer skips it: the guarded run's checks are the unguarded run's)."""
    if not reward.logprob.guard:
        return reward.logprob
    from styleeval import LogProb

    return LogProb(backend=reward.logprob.backend, on_overflow=reward.logprob.on_overflow, progress=False)


class Progress:
    """OUT/report.md and OUT/results.json, rewritten whole (a temporary file renamed into place) whenever the run
    moves: after the first measurement, after each training step, log and checkpoint, and at the end. A run killed at
    any point leaves the last report, which says how far it got."""

    def __init__(self, args: argparse.Namespace, held_out, reward, n_train: int) -> None:
        self.args, self.held_out, self.reward, self.n_train = args, held_out, reward, n_train
        self.started = time.perf_counter()
        self.before: dict | None = None
        self.after: dict | None = None
        self.log: list[dict] = []
        self.train_seconds: float | None = None
        self.checkpoint_seconds: dict[str, float] = {}
        """Training seconds when each checkpoint was saved (a resumed run counts its training time from there)."""
        self.trained_before = 0.0
        """Training seconds of the steps kept from before a resume (its checkpoint's)."""
        self.train_started: float | None = None
        self.resumed: list[dict] = []

    def write(self, status: str) -> str:
        """Both files, now; returns the report's text."""
        elapsed = time.perf_counter() - self.started
        checkpoints = sorted((p.name for p in (self.args.out / "trainer").glob("checkpoint-*")),
                             key=lambda name: int(name.rsplit("-", 1)[1]))
        text = report(self.args, self.before, self.after, self.held_out, self.log, self.train_seconds, self.reward,
                      self.n_train, status, elapsed, checkpoints)
        for resumed in self.resumed:
            text += (f"\nResumed from {resumed['from'] or 'the start of training'} after "
                     f"{resumed['at_elapsed_seconds'] / 60:.1f} min (--resume: the steps after it trained again).\n")
        results = {"status": status, "elapsed_seconds": elapsed, "checkpoints": checkpoints,
                   "args": {k: str(v) for k, v in vars(self.args).items()}, "signature": self.reward.signature,
                   "seconds": self.train_seconds, "checkpoint_seconds": self.checkpoint_seconds,
                   "resumed": self.resumed, "before": self.before, "after": self.after, "log": self.log,
                   "held_out": self.held_out}
        _replace(self.args.out / "results.json", json.dumps(results, indent=1))
        _replace(self.args.out / "report.md", text)
        return text

    def training_seconds(self) -> float:
        """Training seconds of the steps kept so far (from before a resume, then this process's)."""
        return self.trained_before + (time.perf_counter() - self.train_started if self.train_started else 0.0)

    def resume(self, previous: dict, checkpoint: str | None) -> None:
        """Carry on a run killed at ``previous`` (its results.json) from ``checkpoint`` (None: from the start of
        training): its measurement before training, its wall time so far, its checkpoints' training times."""
        self.before = previous["before"]
        self.started -= previous["elapsed_seconds"]
        self.checkpoint_seconds = dict(previous.get("checkpoint_seconds") or {})
        self.trained_before = self.checkpoint_seconds.get(checkpoint, 0.0) if checkpoint else 0.0
        self.resumed = [*previous.get("resumed", []), {"from": checkpoint, "at_elapsed_seconds":
                                                       previous["elapsed_seconds"]}]

    def callback(self):
        """A TRL/transformers callback that writes both files after every step, log and checkpoint."""
        from transformers import TrainerCallback

        progress = self

        class WriteAsItGoes(TrainerCallback):
            def _write(self, state, what: str) -> None:
                progress.log = list(state.log_history)
                progress.write(f"training: {what} {state.global_step} of {state.max_steps} done")

            def on_step_end(self, args, state, control, **kwargs):
                self._write(state, "step")

            def on_log(self, args, state, control, logs=None, **kwargs):
                self._write(state, "step")

            def on_save(self, args, state, control, **kwargs):
                progress.checkpoint_seconds[f"checkpoint-{state.global_step}"] = progress.training_seconds()
                self._write(state, "step")

        return WriteAsItGoes()


def _replace(path: Path, text: str) -> None:
    """``path`` replaced whole by ``text`` (never a half-written file)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def train(args: argparse.Namespace, folder: Path, sources: list[str], reward, progress: Progress,
          checkpoint: str | None = None) -> tuple[object, list[dict], float]:
    import datasets
    import peft
    import trl
    from transformers import AutoModelForCausalLM, AutoTokenizer

    prompts = [[{"role": "user", "content": INSTRUCTION.format(source=s)}] for s in sources]
    data = datasets.Dataset.from_dict({"prompt": prompts, "source": sources, "style": ["formal"] * len(sources)})
    config = trl.GRPOConfig(
        output_dir=str(args.out / "trainer"), max_steps=args.steps, num_generations=args.generations,
        per_device_train_batch_size=args.generations * args.prompts_per_step,
        max_completion_length=args.max_completion_length, learning_rate=args.learning_rate, logging_steps=args.logging_steps,
        save_strategy="steps", save_steps=args.save_steps, report_to="none", use_cpu=True, seed=args.seed,
        temperature=1.0, gradient_checkpointing=False, beta=args.beta, mask_truncated_completions=args.mask_truncated,
        bf16=args.train_dtype == "bfloat16",
        disable_tqdm=not sys.stderr.isatty())
    lora = peft.LoraConfig(r=args.lora_rank, lora_alpha=2 * args.lora_rank, lora_dropout=0.0, task_type="CAUSAL_LM",
                           target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                           "down_proj"])
    trainer = trl.GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(folder), reward_funcs=[reward], args=config,
                              train_dataset=data, processing_class=AutoTokenizer.from_pretrained(folder),
                              peft_config=lora, callbacks=[progress.callback()])
    progress.train_started = time.perf_counter()
    trainer.train(resume_from_checkpoint=str(args.out / "trainer" / checkpoint) if checkpoint else None)
    seconds = progress.training_seconds()
    trainer.save_model(str(args.out / "adapter"))
    return trainer.model, trainer.state.log_history, seconds


def report(args: argparse.Namespace, before: dict | None, after: dict | None, held_out, log: list[dict],
           seconds: float | None, reward, n_train: int, status: str = "done", elapsed: float = 0.0,
           checkpoints: list[str] = ()) -> str:
    took = "" if seconds is None else f", {seconds / 60:.1f} min of training"
    lines = [f"# GRPO with LogProb as the reward: {args.steps} steps{took}", "",
             f"Status: **{status}** ({elapsed / 60:.1f} min since the start; this file is rewritten as the run goes).",
             "", f"Reward: `{reward.signature}`", "",
             f"Trained on {n_train} informal sentences ({args.prompts_per_step} prompts x {args.generations} "
             f"completions per step, LoRA rank {args.lora_rank}, lr {args.learning_rate:g}, max completion "
             f"{args.max_completion_length} tokens, KL beta {args.beta:g}, truncated completions "
             f"{'masked' if args.mask_truncated else 'trained on'}, {args.train_dtype} training on "
             f"{args.threads} thread{'s' if args.threads != 1 else ''}); measured on {len(held_out)} held-out Lai "
             "sentences, greedy."]
    if checkpoints:
        lines += ["", f"Checkpoints (LoRA adapters, in {args.out / 'trainer'}): {', '.join(checkpoints)}."]
    if before is not None:
        lines += ["", f"Source length: {before['means']['source_words']:.1f} words.", "",
                  "| measure | before | after |", "|---|---|---|"]
        names = [k for k in before["means"] if k != "source_words"]
        lines += [f"| {k} | {before['means'][k]:.3f} | {'–' if after is None else format(after['means'][k], '.3f')} |"
                  for k in names]
    lines += ["", f"Training log (every {args.logging_steps} steps): step, reward mean (std), content, style, "
              "completion length, clipped ratio", ""]
    for entry in log:
        if "reward" in entry:
            lines.append(f"- {entry.get('step', '?')}: {entry['reward']:.3f} ({entry.get('reward_std', math.nan):.3f}), "
                         f"{entry.get('logprob/content', math.nan):.3f}, {entry.get('logprob/style', math.nan):.4f}, "
                         f"{entry.get('completions/mean_length', math.nan):.1f}, "
                         f"{entry.get('completions/clipped_ratio', math.nan):.2f}")
    if before is not None:
        lines += ["", "| source | before | after |", "|---|---|---|"]
        afters = after["rewrites"] if after is not None else ["–"] * len(held_out)
        for (source, _), b, a in list(zip(held_out, before["rewrites"], afters, strict=True))[:10]:
            lines.append(f"| {source} | {b} | {a} |".replace("\n", " "))
    return "\n".join(lines) + "\n"


RESUMABLE_DIFFERENCES = ("resume", "threads", "out")
"""Options a resumed run may give differently from the run's own (``--threads``: the speed, and the last bits of the
float sums; ``--out``: the run's folder, copied or moved)."""


def run_to_resume(args: argparse.Namespace) -> tuple[dict, str | None] | None:
    """The killed run in ``args.out`` (its results.json) and its last checkpoint (None: none saved yet); ``None`` where
    it finished. Only the checkpoints the run saved count (results.json's ``checkpoint_seconds``), not those an
    earlier run in the same folder left. Refused, naming the option, where this command's options differ from the run's own."""
    path = args.out / "results.json"
    if not path.is_file():
        raise SystemExit(f"train_grpo_formality.py: error: --resume: no run to resume in {args.out} (no results.json): "
                         "leave --resume out to start one")
    previous = json.loads(path.read_text(encoding="utf-8"))
    given = {k: str(v) for k, v in vars(args).items()}
    differ = [f"--{k.replace('_', '-')} {given.get(k)!r} (the run's: {v!r})" for k, v in previous["args"].items()
              if k not in RESUMABLE_DIFFERENCES and given.get(k) != v]
    differ += [f"--{k.replace('_', '-')} {v!r} (the run's: not recorded, it ran before the option existed)"
               for k, v in given.items() if k not in RESUMABLE_DIFFERENCES and k not in previous["args"]]
    if differ:
        raise SystemExit("train_grpo_formality.py: error: --resume: this command's options differ from the run's own: "
                         f"{'; '.join(differ)}. Give the run's options (results.json, 'args'), or another --out")
    if previous["status"] == "done":
        return None
    if previous["before"] is None:  # killed before its first measurement: nothing to keep
        raise SystemExit(f"train_grpo_formality.py: error: --resume: the run in {args.out} was killed before its "
                         "first measurement: nothing to resume; leave --resume out to start it again")
    saved = previous.get("checkpoint_seconds")  # the checkpoints this run saved (None: a run from before it said)
    checkpoints = sorted((p.name for p in (args.out / "trainer").glob("checkpoint-*")
                          if (p / "trainer_state.json").is_file() and (saved is None or p.name in saved)),
                         key=lambda name: int(name.rsplit("-", 1)[1]))  # complete ones: trainer_state.json is last
    return previous, checkpoints[-1] if checkpoints else None


def missing_training_packages() -> list[str]:
    """The packages of the ``trl`` extra (TRL, peft) that cannot be imported (imported here: the training needs them)."""
    import importlib

    missing = []
    for name in ("trl", "peft"):
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    missing = missing_training_packages()
    if missing:  # before any work: one line naming the extra, as the README promises for a missing package
        print(f"train_grpo_formality.py: error: {' and '.join(missing)} not installed: pip install "
              "'styleeval[trl]' (or pip install -e '.[trl]' in a clone)", file=sys.stderr)
        return 2
    random.seed(args.seed)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from styleeval.gguf_files import REAL_WEIGHTS
    from styleeval.rewards import LogProbReward

    torch.manual_seed(args.seed)
    args.threads = args.threads or busy_machine_threads()
    if args.threads:
        torch.set_num_threads(args.threads)
    args.threads = torch.get_num_threads()  # recorded in results.json
    args.train_dtype = train_dtype(args.train_dtype)  # recorded in results.json and the report
    if not args.resume and (args.out / "results.json").is_file():  # never write over a run's finished work
        print(f"train_grpo_formality.py: error: {args.out} holds a run (results.json): --resume to continue it, or "
              "another --out", file=sys.stderr)
        return 2
    resumed = run_to_resume(args) if args.resume else None
    if args.resume and resumed is None:
        print(f"the run in {args.out} is done: {args.out / 'report.md'}", file=sys.stderr)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    train_sources, held_out = formality_sources(args.data_dir)
    train_sources = train_sources[:args.train_rows]
    held_out = held_out[:args.eval_rows]
    folder = policy_folder()
    reward = LogProbReward(model=REAL_WEIGHTS, **reward_options(args))
    progress = Progress(args, held_out, reward, len(train_sources))
    tokenizer = AutoTokenizer.from_pretrained(folder)
    checkpoint = None
    if resumed:
        previous, checkpoint = resumed
        progress.resume(previous, checkpoint)
        print(f"resuming the run in {args.out} from {checkpoint or 'the start of training'} (its measurement before "
              "training read back)", file=sys.stderr)
    else:
        base = AutoModelForCausalLM.from_pretrained(folder)
        print(f"before: generating {len(held_out)} held-out rewrites", file=sys.stderr)
        progress.before = measure(generate(base, tokenizer, [s for s, _ in held_out], args.max_completion_length),
                                  held_out, reward, not args.no_autorater)
        progress.write("measured before training; training not started")
    print(f"training: {len(train_sources)} sources, {args.steps} steps (report.md rewritten after each step)",
          file=sys.stderr)
    model, progress.log, progress.train_seconds = train(args, folder, train_sources, reward, progress, checkpoint)
    progress.write(f"trained {args.steps} steps; measuring after training")
    model.eval()
    progress.after = measure(generate(model, tokenizer, [s for s, _ in held_out], args.max_completion_length),
                             held_out, reward, not args.no_autorater)
    print(progress.write("done"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
