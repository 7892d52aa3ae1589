#!/usr/bin/env python3
"""Merge dattn_attention_bench's JSON and torch_sdpa_bench.py's results into one markdown table.

Per shape and dattn backend: median ms, TFLOP/s, and the ratio to torch cuDNN and torch flash measured
in the same run (ratio > 1: dattn is faster); then every torch row. Standard library only.

torch_sdpa_bench.py's results are read from the JSON it writes ($OUT/sdpa_anchors.json:
{"ceilings": {...}, "rows": [[shape, backend, ms, tflops, rel_err_or_message], ...]}, NaN for a failed
backend). Without that file (the script died part-way), the row tuples it prints on stdout, one per
line, are parsed from --torch-log. Its first stdout line is "<torch version> <GPU name> <cuDNN version>".
Shapes are matched by (B, H, Sq, Sk, D): the two scripts name them differently.

  bench_table.py --dattn dattn.json --torch sdpa_anchors.json --torch-log torch.log \\
      --gpu "NVIDIA H200" --driver 580.00 --date "2026-12-01 10:00 UTC" --command "..." --out table.md
"""
import argparse
import ast
import datetime
import json
import math
import os
import re
import sys

# torch_sdpa_bench.py's shape names -> (B, H, Sq, Sk, D); its dict is (B, H, Sq, Skv, D) as well.
TORCH_SHAPES = {
    "wan22_5b_704x1280x49_self": (1, 24, 11440, 11440, 128),
    "wan22_5b_cross": (1, 24, 11440, 512, 128),
    "hv15_480p_33f_self": (1, 16, 14040, 14040, 128),
    "wan21_14b_720p_81f_self": (1, 40, 75600, 75600, 128),
    "flux_1024_joint": (1, 24, 4608, 4608, 128),
    "hdim64_16k": (1, 32, 16384, 16384, 64),
}


def finite(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def cell(x):
    """A markdown table cell: pipes escaped, newlines flattened."""
    return str(x).replace("|", "\\|").replace("\n", " ")


def num(x, fmt):
    return fmt % x if finite(x) else "-"


def read_torch_json(path):
    with open(path) as f:
        doc = json.load(f)  # json accepts the NaN that json.dump wrote
    return doc.get("ceilings", {}), [list(r) for r in doc.get("rows", [])]


def parse_torch_log(path):
    """(header, ceilings, rows) from torch_sdpa_bench.py's stdout; rows only from its tuple lines."""
    header, ceilings, rows = None, {}, []
    with open(path, errors="replace") as f:
        lines = [l.rstrip("\n") for l in f]
    for i, line in enumerate(lines):
        s = line.strip()
        if header is None and i == 0 and s and not s.startswith(("{", "(", "|")):
            header = s
        elif s.startswith("{") and not ceilings:
            try:
                ceilings = json.loads(s)
            except ValueError:
                pass
        elif s.startswith("(") and s.endswith(")"):
            # repr() of (name, backend, ms, tflops, err): nan is no Python literal; it becomes None.
            fixed = re.sub(r"(?<![\w'\"])nan(?![\w'\"])", "None", s)
            try:
                t = ast.literal_eval(fixed)
            except (ValueError, SyntaxError):
                continue
            if isinstance(t, tuple) and len(t) == 5 and isinstance(t[0], str):
                rows.append([t[0], t[1], t[2] if t[2] is not None else float("nan"),
                             t[3] if t[3] is not None else float("nan"), t[4]])
    return header, ceilings, rows


def describe_torch_header(header):
    """'2.11.0+cu130 NVIDIA H200 91900' -> 'torch 2.11.0+cu130, NVIDIA H200, cuDNN 91900'."""
    if not header:
        return None
    parts = header.split()
    if len(parts) >= 3 and parts[-1].isdigit():
        return "torch %s, %s, cuDNN %s" % (parts[0], " ".join(parts[1:-1]), parts[-1])
    return header


def dims_text(d):
    return "(%s)" % ", ".join(str(x) for x in d)


def kept_blocks(density, sk, block_size):
    """Key blocks a density keeps per query block when all Sk keys are valid (density_block_count in
    block_mask.cc): max(1, ceil(density * n)), a product within 1e-9 of an integer taken as it."""
    n = (sk + block_size - 1) // block_size
    raw = density * n
    count = round(raw) if abs(raw - round(raw)) < 1e-9 else math.ceil(raw)
    return min(max(int(count), 1), n), n


def sparse_budget_rows(rows, block_size):
    """Per shape and 'SPARSE_BLOCK d=<x>' row: the issue's time budget from FLASH_ATTN and SPARSE_MASK
    measured on the same shape in the same run, and the share of key blocks the density really keeps
    (rounded up per query block, so above the density when d x blocks is not whole)."""
    by_shape, sk_of = {}, {}
    for r in rows:
        if r.get("status") == "ok" and finite(r.get("median_ms")):
            by_shape.setdefault(r.get("shape"), {})[r.get("backend")] = r["median_ms"]
            sk_of[r.get("shape")] = r.get("Sk")
    out = []
    for shape, ms in by_shape.items():
        dense, mask = ms.get("FLASH_ATTN"), ms.get("SPARSE_MASK")
        for backend, t in ms.items():
            if not backend.startswith("SPARSE_BLOCK d=") or dense is None or mask is None:
                continue
            d = float(backend.split("=", 1)[1])
            budget = 1.15 * (d * dense + mask)
            kernel = ms.get("SPARSE_ATTN d=" + backend.split("=", 1)[1])
            kept = "-"
            if block_size and isinstance(sk_of.get(shape), int):
                k, n = kept_blocks(d, sk_of[shape], block_size)
                kept = "%d/%d = %.3f" % (k, n, k / n)
            out.append([cell(shape), "%g" % d, kept, "%.3f" % t, "%.3f" % dense, "%.3f" % mask,
                        "%.3f" % kernel if kernel else "-", "%.2f" % (kernel / (d * dense)) if kernel else "-",
                        "%.3f" % budget, "%.2f" % (t / budget), "%.2fx" % (dense / t)])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dattn", help="dattn_attention_bench --json output")
    ap.add_argument("--torch", help="torch_sdpa_bench.py's sdpa_anchors.json")
    ap.add_argument("--torch-log", help="torch_sdpa_bench.py's stdout (version line; rows if no JSON)")
    ap.add_argument("--gpu", default="unknown GPU")
    ap.add_argument("--driver", default="unknown")
    ap.add_argument("--date", default=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    ap.add_argument("--command", default=None, help="the command line that produced the inputs")
    ap.add_argument("--note", action="append", default=[], help="a line added under the header (repeatable)")
    ap.add_argument("--out", help="also write the markdown to this file")
    a = ap.parse_args(argv)

    notes = list(a.note)
    dattn = None
    if a.dattn and os.path.exists(a.dattn):
        try:
            with open(a.dattn) as f:
                dattn = json.load(f)
        except ValueError as e:
            notes.append("dattn JSON %s unreadable: %s" % (a.dattn, e))
    elif a.dattn:
        notes.append("no dattn results (%s missing)" % a.dattn)

    torch_header, ceilings, trows = None, {}, []
    if a.torch_log and os.path.exists(a.torch_log):
        torch_header, log_ceilings, log_rows = parse_torch_log(a.torch_log)
    else:
        log_ceilings, log_rows = {}, []
    if a.torch and os.path.exists(a.torch):
        ceilings, trows = read_torch_json(a.torch)
    elif log_rows or log_ceilings:
        ceilings, trows = log_ceilings, log_rows
        notes.append("torch results parsed from its stdout (%s): its JSON was not written" % a.torch_log)
    elif a.torch or a.torch_log:
        notes.append("no torch results (neither %s nor rows in %s)" % (a.torch, a.torch_log))

    # torch TFLOP/s and ms per (dims, backend)
    torch_at = {}
    for name, bn, ms, tf, _err in trows:
        d = TORCH_SHAPES.get(name)
        if d is not None and finite(tf):
            torch_at[(d, bn)] = (ms, tf)

    out = []
    w = out.append
    w("# dattn attention vs PyTorch SDPA, same GPU, same run")
    w("")
    w("- GPU: %s, driver %s" % (a.gpu, a.driver))
    w("- date: %s" % a.date)
    if a.command:
        w("- command: `%s`" % a.command)
    if dattn:
        rounds = dattn.get("rounds", 1)
        w("- dattn: `%s` (%s; warmup %s, iters %s%s, median)" % (
            dattn.get("command", "?"), dattn.get("device_summary", "?"), dattn.get("warmup", "?"),
            dattn.get("iters", "?"), "" if rounds == 1 else ", %s rounds of every row in turn" % rounds))
        if dattn.get("scale", 1) not in (1, 1.0):
            w("- **dattn ran with --scale %s (smoke run): its shapes differ from torch's, "
              "so there are no ratios**" % dattn["scale"])
    th = describe_torch_header(torch_header)
    if th:
        w("- torch: %s" % th)
    if ceilings:
        parts = []
        for key, label, unit in (("gemm_bf16_tflops", "bf16 GEMM", "TFLOP/s"),
                                 ("gemm_fp8_tflops", "fp8 GEMM", "TFLOP/s"),
                                 ("gemm_int8_tops", "int8 GEMM", "TOPS"), ("copy_TBps", "device copy", "TB/s")):
            if finite(ceilings.get(key)):
                parts.append("%s %s %s" % (label, num(ceilings[key], "%.3g" if unit == "TB/s" else "%.0f"), unit))
        if parts:
            w("- ceilings (torch, this run): " + ", ".join(parts))
    w("- TFLOP/s = 4·B·H·Sq·Sk·D / median time; ratio = dattn TFLOP/s / torch TFLOP/s on the same shape "
      "(> 1: dattn faster)")
    for n in notes:
        w("- note: %s" % n)
    w("")

    if dattn and dattn.get("rows"):
        w("| shape (B, H, Sq, Sk, D) | dattn backend | ms | TFLOP/s | torch cuDNN TFLOP/s | vs cuDNN "
          "| torch flash TFLOP/s | vs flash | rel L2 | rel L1 | cosine | note |")
        w("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
        for r in dattn["rows"]:
            d = (r.get("B"), r.get("H"), r.get("Sq"), r.get("Sk"), r.get("D"))
            ok = r.get("status") == "ok"
            tf = r.get("tflops") if ok else None
            cudnn = torch_at.get((d, "cudnn"), (None, None))[1]
            flash = torch_at.get((d, "flash"), (None, None))[1]
            ratio = lambda t: "%.2f" % (tf / t) if finite(tf) and finite(t) and t > 0 else "-"
            note = r.get("status", "") if not ok else ""
            if ok and r.get("nonfinite"):
                note = "NON-FINITE outputs: %d" % r["nonfinite"]
            if r.get("reference"):
                note = (note + "; " if note else "") + "ref " + r["reference"]
            cells = [cell(r.get("shape", "?")) + " " + dims_text(d), cell(r.get("backend", "?")),
                     num(r.get("median_ms") if ok else None, "%.3f"),
                     num(tf, "%.1f" if finite(tf) and tf >= 10 else "%.3g"),
                     num(cudnn, "%.1f"), ratio(cudnn), num(flash, "%.1f"), ratio(flash),
                     num(r.get("rel_l2"), "%.2e"), num(r.get("rel_l1"), "%.2e"), num(r.get("cosine"), "%.5f"),
                     cell(note)]
            w("| " + " | ".join(cells) + " |")
        w("")

    sparse = sparse_budget_rows(dattn.get("rows", []) if dattn else [], (dattn or {}).get("sparse_block_size"))
    if sparse:
        w("SPARSE_BLOCK against its target (issue: time <= 1.15 x (density x FLASH_ATTN dense + SPARSE_MASK), "
          "i.e. time / budget <= 1):")
        w("")
        w("SPARSE_ATTN is the attention kernel alone on a mask estimated before timing; SPARSE_BLOCK = "
          "SPARSE_MASK + SPARSE_ATTN, as a model calls it.")
        w("")
        w("| shape | density | key blocks kept | SPARSE_BLOCK ms | FLASH_ATTN ms | SPARSE_MASK ms | SPARSE_ATTN ms "
          "| SPARSE_ATTN / (density x dense) | budget ms | time / budget | speed-up vs dense |")
        w("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        for row in sparse:
            w("| " + " | ".join(row) + " |")
        w("")

    golden = dattn.get("sparse_golden_errors", []) if dattn else []
    if golden:
        w("SPARSE_BLOCK's error to exact attention on the golden diffusers attention inputs (CUDA, bf16):")
        w("")
        w("The golden inputs are tiny (72 keys in self-attention, 12 in cross), so most densities keep the same")
        w("key blocks there and show the same error; the kept column says how many were kept per query block.")
        w("")
        w("| case | backend | key blocks kept | rel L2 | rel L1 | cosine |")
        w("|---|---|--:|--:|--:|--:|")
        for g in golden:
            w("| %s | %s | %s | %s | %s | %s |" % (cell(g.get("case", "?")), cell(g.get("backend", "?")),
                                                  cell(g.get("key_blocks_kept") or "-"),
                                                  num(g.get("rel_l2"), "%.2e"), num(g.get("rel_l1"), "%.2e"),
                                                  num(g.get("cosine"), "%.5f")))
        w("")

    if trows:
        w("torch, same run (`torch_sdpa_bench.py`; BHSD layout; rel err vs its first backend, flash):")
        w("")
        w("| shape (B, H, Sq, Sk, D) | torch backend | ms | TFLOP/s | rel err / message |")
        w("|---|---|--:|--:|---|")
        for name, bn, ms, tf, err in trows:
            d = TORCH_SHAPES.get(name)
            e = num(err, "%.2e") if not isinstance(err, str) else cell(err)
            w("| %s %s | %s | %s | %s | %s |" % (cell(name), dims_text(d) if d else "", cell(bn), num(ms, "%.3f"),
                                               num(tf, "%.1f"), e))
        w("")

    text = "\n".join(out)
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    return 0 if (dattn or trows) else 1


if __name__ == "__main__":
    sys.exit(main())
