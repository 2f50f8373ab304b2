"""Mistake: "programs live until memory is full; the cache releases the least recently used one then". A partition
Dynamo dropped keeps its programs resident (nothing releases them when it dies), and with a key built from
id(partition) a new partition at the same address could be handed another graph's program. The lesson: "A partition
dies with its compiled graph when Dynamo drops it: release its programs then"."""
from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = (
    "changed_weights_are_uploaded_again",
    "dropped_models_release_their_programs",
    "replaced_parameter_data_is_uploaded_again",
    "weight_changes_while_program_memory_fills",
)

_ref._forget = lambda owner, signatures: None
