# Builds SageAttention2's sm90 kernel and its quantization kernels (thu-ml/SageAttention, a bench anchor only,
# never part of dattn) with torch's JIT extension loader. Only the instances the anchor runs are compiled:
# not causal, no LSE, bf16 output (head dims 64/128 and both Q/K granularities kept). On the GPU machine:
#   TORCH_CUDA_ARCH_LIST=9.0a python3 bench/sageattention2_anchor_build.py SAGEATTENTION_CHECKOUT BUILD_DIR qattn|fused
# (it edits the checkout's sm90 .cu in place: use a copy).
import os, sys, time
import torch
from torch.utils.cpp_extension import load
src, bd = sys.argv[1], sys.argv[2]
os.makedirs(bd, exist_ok=True)
cu = os.path.join(src, "csrc/qattn/qk_int_sv_f8_cuda_sm90.cu")
text = open(cu).read()
reduced = r'''
#undef DISPATCH_CAUSAL
#define DISPATCH_CAUSAL(is_causal, IS_CAUSAL, ...) \
  if (is_causal == 0) { constexpr bool IS_CAUSAL = false; __VA_ARGS__ } else { throw std::invalid_argument("anchor build: causal not compiled"); }
#undef DISPATCH_RETURN_LSE
#define DISPATCH_RETURN_LSE(return_lse, RETURN_LSE, ...) \
  if (return_lse == 0) { constexpr bool RETURN_LSE = false; __VA_ARGS__ } else { throw std::invalid_argument("anchor build: lse not compiled"); }
#undef DISPATCH_PYTORCH_DTYPE_TO_CTYPE_FP16
#define DISPATCH_PYTORCH_DTYPE_TO_CTYPE_FP16(pytorch_dtype, c_type, ...) \
  if (pytorch_dtype == at::ScalarType::BFloat16) { using c_type = nv_bfloat16; __VA_ARGS__ } else { TORCH_CHECK(false, "anchor build: bf16 only"); }
'''
text = text.replace('#include "attn_utils.cuh"', '#include "attn_utils.cuh"\n' + reduced, 1)
open(cu, "w").write(text)
nvcc = ["-O3", "-std=c++17", "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__", "--use_fast_math",
        "--threads=8", "-diag-suppress=174", "-Xptxas=-v"]
cxx = ["-O3", "-std=c++17", "-DENABLE_BF16", "-fopenmp"]
which = sys.argv[3]
t0 = time.time()
if which == "qattn":
    m = load(name="_qattn_sm90", sources=[os.path.join(src, "csrc/qattn/pybind_sm90.cpp"), cu],
             extra_cflags=cxx, extra_cuda_cflags=nvcc, extra_ldflags=["-lcuda"], build_directory=bd, verbose=True)
else:
    m = load(name="_fused", sources=[os.path.join(src, "csrc/fused/pybind.cpp"), os.path.join(src, "csrc/fused/fused.cu")],
             extra_cflags=cxx, extra_cuda_cflags=nvcc, build_directory=bd, verbose=True)
print("built", which, m.__file__, "in %.0f s" % (time.time() - t0), flush=True)
