"""Mistake: the backend hands Dynamo's graph straight back (`return gm.forward`).

Every answer is exactly eager's, because the CPU ran everything; the NPU ran nothing. A numerical check alone
can never catch this, which is why the checks also read what ran on the NPU.
"""
from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")

KILLED_BY = (
    "changed_weights_are_uploaded_again",
    "dropped_models_release_their_programs",
    "every_dimension_is_part_of_the_signature",
    "float64_falls_back_loudly",
    "full_program_memory_releases_the_least_recently_used",
    "graph_break_gives_two_npu_graphs",
    "injected_fault_reruns_that_call_on_cpu",
    "int_arguments_are_part_of_the_signature",
    "integer_work_stays_on_the_host",
    "layout_ops_do_not_split_partitions",
    "linear_gelu_is_one_launch",
    "lone_supported_op_runs_on_npu",
    "memory_others_hold_falls_back_for_that_call",
    "new_batch_sizes_run_on_npu",
    "partitions_and_launches_match_reference",
    "random_mlps_with_cpu_ops",
    "real_models_keep_the_npu_busy_at_every_shape",
    "replaced_parameter_data_is_uploaded_again",
    "supported_models_run_entirely_on_npu",
    "training_steps_match_eager",
    "unsafe_pair_is_not_fused",
    "unsupported_ops_stay_on_cpu",
    "weight_changes_while_program_memory_fills",
    "weights_are_uploaded_once",
)


def npu_backend(gm, example_inputs):
    return gm.forward


_ref.npu_backend = npu_backend
_ref.register()
