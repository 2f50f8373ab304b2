"""Mistake: the fused node's recorded value always goes under meta["val"], whichever key the capture uses. Dynamo
graphs record every node's value under meta["example_value"], so there the fused node's value sits where no pass
looks for it (blind round k03-r2, wrong_dynamo_val_key)."""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")

KILLED_BY = (
    "approximate_is_carried",
    "dead_nodes_are_removed",
    "dynamo_graphs_fuse",
    "fused_nodes_record_their_value",
    "gelu_read_twice_still_fuses",
    "linear_output_with_two_users_is_not_fused",
    "linear_without_bias_fuses",
    "nodes_outside_matches_untouched",
    "random_mlps_as_torch_graphs",
    "second_call_fuses_nothing",
    "shared_linear_module_keeps_working",
    "unrelated_nodes_between_linear_and_gelu",
)

_rewrite = _ref.rewrite


def rewrite(gm, match):
    fused = _rewrite(gm, match)
    value = fused.meta.pop("example_value", None)
    if value is not None:
        fused.meta["val"] = value
    return fused


_ref.rewrite = rewrite
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
