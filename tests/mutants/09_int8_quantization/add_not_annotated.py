"""Mistake: only linears are annotated: every add stays float, on the CPU."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('adds_read_one_scale', 'every_linear_and_add_runs_int8_on_the_npu',
    'quantizer_annotates_linears_and_adds', 'random_mlps_run_int8_on_the_npu')

_ref.NPUQuantizer._annotate_add = staticmethod(lambda add: None)

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
