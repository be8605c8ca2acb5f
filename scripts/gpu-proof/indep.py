# Independent check of kernel-lsp bench: CUDA events, 256 MB L2 flush, reference and
# candidate interleaved (one repeat of each, synchronized, same stream), median. No harness code.
import importlib.util, json, statistics, sys, torch
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path); m = importlib.util.module_from_spec(spec)
    sys.modules[name] = m; spec.loader.exec_module(m); return m
def pair_ms(models, inputs, n=int(__import__('os').environ.get('REPEATS', 30))):
    flush = torch.empty(64 * 1024 * 1024, dtype=torch.int32, device="cuda"); ts = [[] for _ in models]
    with torch.no_grad():
        for _ in range(5): [m(*inputs) for m in models]
        for _ in range(n):
            for m, t in zip(models, ts):
                flush.zero_(); torch.cuda.synchronize(); s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(); m(*inputs); e.record(); torch.cuda.synchronize(); t.append(s.elapsed_time(e))
    return [statistics.median(t) for t in ts], ts
ref_mod = load(sys.argv[1], "ref"); torch.manual_seed(42); ref = ref_mod.Model(*ref_mod.get_init_inputs()).cuda().eval()
torch.manual_seed(1); inputs = [x.cuda() for x in ref_mod.get_inputs()]
for path in sys.argv[2:]:
    torch.manual_seed(42); new = load(path, path.split("/")[-1][:-3]).ModelNew(*ref_mod.get_init_inputs()).cuda().eval()
    with torch.no_grad(): diff = (ref(*inputs) - new(*inputs)).abs().max().item()
    (t_ref, t_new), (s_ref, s_new) = pair_ms([ref, new], inputs)
    print(json.dumps({"file": path.split("/")[-1], "ref_ms": round(t_ref, 3), "new_ms": round(t_new, 3), "speedup": round(t_ref / t_new, 4), "max_abs_diff": diff, "ref_samples": [round(x, 4) for x in s_ref], "new_samples": [round(x, 4) for x in s_new]}), flush=True)
