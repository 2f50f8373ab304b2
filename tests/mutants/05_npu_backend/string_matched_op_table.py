"""Mistake: the op table is a set of ATen names matched against str(node.target), applied to the graph Dynamo
hands the backend. Dynamo graphs call torch functions (torch._C._nn.linear, torch.relu, operator.add), whose
str() is "<built-in function linear>", never "aten.linear.default": nothing matches, no partition is made, and
the whole model runs on the CPU -- with correct answers and no warning.

The rest of the pipeline is a sound design (partition the Dynamo graph, lower each NPU partition with
make_fx, fuse, compile per signature, fall back per call); only the table is wrong.
"""
import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from checker.kit import load_reference
from katas.common.npu import NPU_OPS

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
    "registered_as_kata_npu",
    "replaced_parameter_data_is_uploaded_again",
    "supported_models_run_entirely_on_npu",
    "training_steps_match_eager",
    "unsafe_pair_is_not_fused",
    "unsupported_ops_stay_on_cpu",
    "weight_changes_while_program_memory_fills",
    "weights_are_uploaded_once",
)

ATEN_NAMES = {f"aten.{op}.default" for op in NPU_OPS} | {"aten.add.Tensor", "aten.mul.Tensor", "aten.transpose.int"}


class StringSupport(OperatorSupportBase):
    def is_node_supported(self, submodules, node):
        return node.op == "call_function" and str(node.target) in ATEN_NAMES


class _ArgRecorder(torch.fx.Interpreter):
    """Runs the partitioned graph once to learn each partition's real inputs."""

    def __init__(self, gm):
        super().__init__(gm)
        self.seen = {}

    def call_module(self, target, args, kwargs):
        self.seen[target] = args
        return super().call_module(target, args, kwargs)


def npu_backend(gm, example_inputs):
    partitioner = CapabilityBasedPartitioner(gm, StringSupport(), allows_single_node_partition=True)
    gm = partitioner.partition_and_fuse(prefix="npu_partition_")
    recorder = _ArgRecorder(gm)
    with torch.no_grad():
        recorder.run(*example_inputs)
    for node in gm.graph.nodes:
        if node.op == "call_module" and node.target.startswith("npu_partition_"):
            args = recorder.seen[node.target]
            with torch.no_grad():
                aten = make_fx(gm.get_submodule(node.target))(*args)
            _ref._fusion.fuse_linear_gelu(aten)
            setattr(gm, node.target, _ref.NPUPartition(node.target, aten, freeze=not torch.is_grad_enabled()))
    gm.recompile()
    return gm.forward
