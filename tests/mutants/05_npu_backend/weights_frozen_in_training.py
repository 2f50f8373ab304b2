"""Mistake: parameters are frozen under autograd too (aot_autograd's training forward receives the nn.Parameters
as well). The version check keeps the answers right, but the optimizer changes every parameter after each
step, so every training step recompiles and re-uploads every program that froze one."""
from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("training_steps_match_eager",)

_ref.compile_for_training = _ref.compile_for_inference
