"""Train SmolLM2-135M-Instruct to write informal sentences formally, with LogProb as the reward (TRL's GRPO, LoRA).

The check of issue 49: a real, small training run on CPU, and independent measures that the reward was not gamed.

    python scripts/train_grpo_formality.py --data-dir ../shared/data --out runs/grpo-formality

Data: Lai et al.'s 80 informal GYAFC sentences (Family & Relationships): every fourth one (20) held out, the other
60 trained on, with the formality rows' sources of the style-gap test set. The policy is the smollm2-135m preset
(the real-weights GGUF, converted once into the cache), with LoRA adapters (peft); the reward is
:class:`styleeval.rewards.LogProbReward` on the same preset (a second copy of the weights, frozen).

Before and after, on the 20 held-out sentences (greedy decoding): the reward and its two terms; independent checks
that it was not gamed: BLEU to Lai's human formal reference (one per sentence: r_bleu), S-chrF / S-BLEU to the source and exact
copies (copying), length, the autorater's 1-5 meaning and style ratings (the same 135M model in expected mode:
near chance on this model, docs/reproduction.md: reported, not trusted); the 10 first held-out examples. Written to
OUT/report.md and OUT/results.json (docs/training.md quotes them).
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

ROOT = Path(__file__).resolve().parents[1]
INSTRUCTION = "Rewrite the following sentence in a formal style. Reply with the rewritten sentence only.\n\n{source}"
CHECKS = ("r_bleu", "s_chrf", "s_bleu")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--data-dir", default=os.environ.get("STYLEEVAL_DATA_DIR"), help="the corpus mirror")
    parser.add_argument("--out", type=Path, required=True, help="a folder for the adapter, report.md, results.json")
    parser.add_argument("--steps", type=int, default=150, help="GRPO steps (9-10 s each on 2 quiet CPU cores)")
    parser.add_argument("--generations", type=int, default=4, help="completions per prompt (GRPO's group)")
    parser.add_argument("--prompts-per-step", type=int, default=2)
    parser.add_argument("--max-completion-length", type=int, default=40)
    parser.add_argument("--learning-rate", type=float, default=5e-4)
    parser.add_argument("--lora-rank", type=int, default=16)
    parser.add_argument("--style-weight", type=float, default=None, help="the reward's (default: its own default)")
    parser.add_argument("--beta", type=float, default=0.0,
                        help="GRPO's KL penalty to the untrained model (TRL's default 0: none, no reference pass)")
    parser.add_argument("--mask-truncated", action="store_true",
                        help="leave completions cut at --max-completion-length out of the loss (TRL's "
                             "mask_truncated_completions)")
    parser.add_argument("--logging-steps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-autorater", action="store_true", help="skip the autorater's ratings (faster)")
    parser.add_argument("--eval-rows", type=int, default=None, help="measure the first N held-out rows (default: 20)")
    return parser.parse_args(argv)


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
    from styleeval.gguf_files import REAL_WEIGHTS, resolve
    from styleeval.models import gguf_folder

    return gguf_folder(resolve(REAL_WEIGHTS))


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
    scores = reward.logprob.score(sources, rewrites, "formal")
    rows["logprob_content"], rows["logprob_style"] = scores.content, scores.style_strength
    rows["reward"] = reward(prompts=sources, completions=rewrites, source=sources, style=["formal"] * len(sources))
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


def train(args: argparse.Namespace, folder: Path, sources: list[str], reward) -> tuple[object, list[dict], float]:
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
        save_strategy="no", report_to="none", use_cpu=True, seed=args.seed, temperature=1.0,
        gradient_checkpointing=False, beta=args.beta, mask_truncated_completions=args.mask_truncated, disable_tqdm=not sys.stderr.isatty())
    lora = peft.LoraConfig(r=args.lora_rank, lora_alpha=2 * args.lora_rank, lora_dropout=0.0, task_type="CAUSAL_LM",
                           target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                           "down_proj"])
    trainer = trl.GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(folder), reward_funcs=[reward], args=config,
                              train_dataset=data, processing_class=AutoTokenizer.from_pretrained(folder),
                              peft_config=lora)
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    trainer.save_model(str(args.out / "adapter"))
    return trainer.model, trainer.state.log_history, seconds


def report(args: argparse.Namespace, before: dict, after: dict, held_out, log: list[dict], seconds: float,
           reward, n_train: int) -> str:
    names = [k for k in before["means"] if k != "source_words"]
    lines = [f"# GRPO with LogProb as the reward: {args.steps} steps, {seconds / 60:.1f} min",
             "", f"Reward: `{reward.signature}`", "",
             f"Trained on {n_train} informal sentences ({args.prompts_per_step} prompts x {args.generations} "
             f"completions per step, LoRA rank {args.lora_rank}, lr {args.learning_rate:g}, max completion "
             f"{args.max_completion_length} tokens, KL beta {args.beta:g}, truncated completions "
             f"{'masked' if args.mask_truncated else 'trained on'}); measured on {len(held_out)} held-out Lai sentences, greedy. "
             f"Source length: {before['means']['source_words']:.1f} words.", "",
             "| measure | before | after |", "|---|---|---|"]
    lines += [f"| {k} | {before['means'][k]:.3f} | {after['means'][k]:.3f} |" for k in names]
    lines += ["", f"Training log (every {args.logging_steps} steps): step, reward mean (std), content, style, completion length, "
              "clipped ratio", ""]
    for entry in log:
        if "reward" in entry:
            lines.append(f"- {entry.get('step', '?')}: {entry['reward']:.3f} ({entry.get('reward_std', math.nan):.3f}), "
                         f"{entry.get('logprob/content', math.nan):.3f}, {entry.get('logprob/style', math.nan):.4f}, "
                         f"{entry.get('completions/mean_length', math.nan):.1f}, "
                         f"{entry.get('completions/clipped_ratio', math.nan):.2f}")
    lines += ["", "| source | before | after |", "|---|---|---|"]
    for (source, _), b, a in list(zip(held_out, before["rewrites"], after["rewrites"], strict=True))[:10]:
        lines.append(f"| {source} | {b} | {a} |".replace("\n", " "))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    random.seed(args.seed)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from styleeval.gguf_files import REAL_WEIGHTS
    from styleeval.rewards import LogProbReward

    torch.manual_seed(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    train_sources, held_out = formality_sources(args.data_dir)
    held_out = held_out[:args.eval_rows]
    folder = policy_folder()
    options = {} if args.style_weight is None else {"style_weight": args.style_weight}
    reward = LogProbReward(model=REAL_WEIGHTS, **options)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    base = AutoModelForCausalLM.from_pretrained(folder)
    print(f"before: generating {len(held_out)} held-out rewrites", file=sys.stderr)
    before = measure(generate(base, tokenizer, [s for s, _ in held_out], args.max_completion_length), held_out,
                     reward, not args.no_autorater)
    print(f"training: {len(train_sources)} sources, {args.steps} steps", file=sys.stderr)
    model, log, seconds = train(args, folder, train_sources, reward)
    model.eval()
    after = measure(generate(model, tokenizer, [s for s, _ in held_out], args.max_completion_length), held_out,
                    reward, not args.no_autorater)
    text = report(args, before, after, held_out, log, seconds, reward, len(train_sources))
    (args.out / "report.md").write_text(text, encoding="utf-8")
    (args.out / "results.json").write_text(json.dumps(
        {"args": {k: str(v) for k, v in vars(args).items()}, "signature": reward.signature, "seconds": seconds,
         "before": before, "after": after, "log": log, "held_out": held_out}, indent=1), encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
