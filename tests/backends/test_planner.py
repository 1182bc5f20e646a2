"""The torch-free scoring plan (:mod:`styleeval.backends.planner`): exact plans (prefixes, groups, token trees, batches,
orders) on small inputs, and an import that brings no torch."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from styleeval.backends import planner
from styleeval.backends.planner import Budget, PackedPrompt

SYSTEM = [1, 2, 3, 4]  # a system turn every prompt starts with


def test_importing_the_planner_imports_neither_torch_nor_numpy():
    code = ("import json, sys; import styleeval.backends.planner; "
            "print(json.dumps(sorted(m for m in ('torch', 'numpy', 'transformers') if m in sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_the_shared_prefix_keeps_one_token_of_every_prompt_outside():
    assert planner.shared_prefix_length([SYSTEM + [5, 6], SYSTEM + [7]]) == 4
    assert planner.shared_prefix_length([SYSTEM, SYSTEM + [7]]) == 3  # the shortest prompt keeps its last token
    assert planner.shared_prefix_length([SYSTEM]) == 3
    assert planner.shared_prefix_length([[9, 1], SYSTEM]) == 0
    assert planner.shared_prefix_length([[5], [5]]) == 0


def test_prefix_groups_are_runs_of_sorted_prompts_sharing_min_shared_more_tokens():
    prompts = [SYSTEM + [10, 11, 12, 20], SYSTEM + [30], SYSTEM + [10, 11, 12, 21, 22], SYSTEM + [10, 11, 40],
               SYSTEM + [10, 11, 12, 20]]
    # sorted: 0 = 4 ([..10, 11, 12, 20], ties in input order) < 2 ([..12, 21]) < 3 ([..11, 40]) < 1 ([30])
    assert planner.prefix_groups(prompts, 4, 2) == [(6, [0, 4, 2, 3]), (4, [1])]
    # three more tokens: row 3 (two more) leaves the run; a group sharing too little runs on the global prefix
    assert planner.prefix_groups(prompts, 4, 3) == [(7, [0, 4, 2]), (4, [3]), (4, [1])]
    # a run stays together while its common prefix is at least half of what its first rows share
    ten = list(range(10))
    assert planner.prefix_groups([[*ten, 50], [*ten, 60], [0, 1, 2, 70]], 0, 1) == [(10, [0, 1]), (3, [2])]
    assert planner.prefix_groups([], 0, 1) == []


def test_a_group_keeps_one_token_of_each_prompt_outside_its_prefix():
    assert planner.prefix_groups([[1, 2, 3], [1, 2, 3]], 0, 1) == [(2, [0, 1])]
    assert planner.prefix_groups([[1, 2, 3], [1, 2, 3, 4]], 0, 1) == [(2, [0, 1])]


def test_continuations_of_one_prompt_pack_as_branches_off_its_last_token():
    prompts = [[1, 2], [5], [1, 2], [5], [1, 2], [7]]
    continuations = [[10, 11, 12], [20], [], [21, 22], [13], []]
    assert planner.pack_continuations(prompts, continuations) == [
        PackedPrompt((1, 2), [0, 4], tokens=[10, 11], parents=[-1, 0], reads=[-1, 0, 1, -1], targets=[10, 11, 12, 13]),
        PackedPrompt((5,), [1, 3], tokens=[21], parents=[-1], reads=[-1, -1, 0], targets=[20, 21, 22]),
    ]
    assert planner.pack_continuations([[1]], [[]]) == []


def test_tree_positions_follow_the_depth_and_reads_the_node_they_follow():
    # two branches of 3 and 2 nodes after a prompt of 5 tokens: each branch at the positions it would have alone
    assert planner.tree_positions(5, [-1, 0, 1, -1, 3]) == [5, 6, 7, 5, 6]
    assert planner.tree_positions(1, [-1, -1, 1, 1, 3]) == [1, 1, 2, 2, 3]
    assert planner.read_positions(4, 3, [-1, 0, 1, -1, 3]) == [4, 5, 6, 4, 8]
    assert planner.read_positions(0, 2) == [0, 1]
    assert planner.first_bad_parent([-1, 0, 1, 1]) is None
    assert planner.first_bad_parent([-1, 0, 2]) == 2  # itself
    assert planner.first_bad_parent([-1, -2]) == 1


def test_batches_are_longest_first_under_the_token_budget_and_the_row_cap():
    lengths = [3, 40, 7, 7, 100, 1]
    order = planner.longest_first(lengths)
    assert order == [4, 1, 2, 3, 0, 5]  # rows of one length in input order
    ranked = [lengths[i] for i in order]
    assert [list(b) for b in planner.batches(ranked, Budget(100, 64))] == [[0], [1, 2], [3, 4, 5]]
    assert [list(b) for b in planner.batches(ranked, Budget(100, 64), max_batch_rows=2)] == [[0], [1, 2], [3, 4], [5]]
    assert [list(b) for b in planner.batches(ranked, Budget(10, 64))] == [[0], [1], [2], [3], [4, 5]]
    assert list(planner.batches([], Budget(10, 64))) == []


def test_a_budget_halved_meanwhile_cuts_the_next_batches_smaller():
    budget = Budget(40, 64)
    got = []
    for span in planner.batches([10] * 10, budget):
        got.append(list(span))
        budget.batch_tokens //= 2  # what the engine does on out-of-memory
    assert got == [[0, 1, 2, 3], [4, 5], [6], [7], [8], [9]]


@pytest.mark.parametrize(("cached", "wanted", "block", "kept"), [
    ([1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 6], 2, 4),
    ([1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 6], 1, 5),
    ([1, 2, 3], [1, 9], 2, 0),
    ([], [1, 2], 16, 0),
    (list(range(40)), list(range(33)) + [0], 16, 32),
])
def test_only_whole_blocks_of_a_cache_are_reused(cached, wanted, block, kept):
    assert planner.reusable_prefix(cached, wanted, block) == kept


def test_rows_with_one_key_are_gathered_in_the_order_first_seen():
    keys = [(1, 2), (3,), (1, 2), (1,)]
    assert planner.rows_by_key(keys) == {(1, 2): [0, 2], (3,): [1], (1,): [3]}
    assert planner.rows_by_key(keys, rows=[3, 2, 1]) == {(1,): [3], (1, 2): [2], (3,): [1]}


def test_rows_sharing_a_prefix_are_ordered_side_by_side():
    prompts = [[1, 2, 9], [5], [1, 2], [1, 2, 3], [1, 2]]
    assert planner.prefix_order(prompts) == [2, 4, 3, 0, 1]
    pairs = [((1, 2), (7,)), ((1,), (9,)), ((1, 2), (3, 4)), ((1, 2), (7,))]
    assert planner.prefix_order(pairs) == [1, 2, 0, 3]  # by prompt, then by continuation
