# SageAttention2's own sm90 path (sageattn_qk_int8_pv_fp8_cuda_sm90: Q/K quantization + the kernel, the
# whole call as a user runs it) against torch cuDNN SDPA on dattn's attention-bench shapes, NHD layout,
# bf16, warmup 5, iters 20, 3 interleaved rounds, median. Accuracy against float32 math SDPA on a head slice.
#   OUT=DIR python3 bench/sageattention2_anchor.py SAGEATTENTION_CHECKOUT QATTN_BUILD_DIR FUSED_BUILD_DIR
# (table: bench/results/2026-12-04-h200-sage-attn-vs-sageattention2.md)
import importlib.util, json, os, sys
import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
from torch_timing import median_event_ms as bench  # bench/torch_timing.py, beside this script
src, bds = sys.argv[1], sys.argv[2:]
def load_so(name):
    path = [os.path.join(bd, f) for bd in bds for f in os.listdir(bd) if f.startswith(name) and f.endswith(".so")][0]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod); return mod
sys.path.insert(0, src)
sys.modules["sageattention._qattn_sm90"] = load_so("_qattn_sm90")
sys.modules["sageattention._fused"] = load_so("_fused")
from sageattention.core import sageattn_qk_int8_pv_fp8_cuda_sm90 as sage90
print(torch.__version__, torch.cuda.get_device_name(), torch.backends.cudnn.version(), flush=True)
shapes = {"wan22_5b_self": (1, 24, 11440, 11440, 128), "hv15_480p_self": (1, 16, 14040, 14040, 128),
          "wan21_14b_self": (1, 40, 75600, 75600, 128), "flux_joint": (1, 24, 4608, 4608, 128),
          "hd64": (1, 32, 16384, 16384, 64), "wan22_5b_cross": (1, 24, 11440, 512, 128)}
torch.manual_seed(0)
rows = []
for name, (B, H, Sq, Sk, D) in shapes.items():
    q = torch.randn(B, Sq, H, D, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(B, Sk, H, D, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(B, Sk, H, D, device="cuda", dtype=torch.bfloat16)
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))  # BHSD views for torch
    fns = {"cudnn": lambda: _cudnn(qt, kt, vt),
           "sage2_per_thread": lambda: sage90(q, k, v, tensor_layout="NHD", qk_quant_gran="per_thread"),
           "sage2_per_warp": lambda: sage90(q, k, v, tensor_layout="NHD", qk_quant_gran="per_warp")}
    def _cudnn(a, b, c):
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION): return F.scaled_dot_product_attention(a, b, c)
    times = {n: [] for n in fns}
    for r in range(3):
        for n, f in fns.items(): times[n].append(bench(f, iters=5 if Sq > 50000 else 20, warm=2 if Sq > 50000 else 5))
    hs = slice(0, 2)  # accuracy on two heads against float32 math
    ref = F.scaled_dot_product_attention(qt[:, hs].float(), kt[:, hs].float(), vt[:, hs].float()) if Sq * Sk <= 2e8 else None
    for n, f in fns.items():
        med = sorted(times[n])[1]; flops = 4 * B * H * Sq * Sk * D
        row = {"shape": name, "dims": [B, H, Sq, Sk, D], "impl": n, "ms": med, "tflops": flops / med / 1e9, "rounds": times[n]}
        if ref is not None:
            o = f(); o = (o.transpose(1, 2) if n != "cudnn" else o)[:, hs].float()
            d = (o - ref)
            row["rel_l1"] = (d.abs().sum() / ref.abs().sum()).item(); row["rel_l2"] = (d.norm() / ref.norm()).item()
            row["cosine"] = F.cosine_similarity(o.flatten(), ref.flatten(), dim=0).item()
        rows.append(row); print(json.dumps(row), flush=True)
    del q, k, v
json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "sage2_anchor.json"), "w"), indent=1)
