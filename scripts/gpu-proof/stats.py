import json, statistics, sys
def q(xs, p):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(p * len(xs)))]
STATS = {"median": statistics.median, "mean": statistics.mean, "min": min, "p10": lambda x: q(x, .1), "p25": lambda x: q(x, .25)}
indep = {r["file"]: r for r in map(json.loads, (l for l in open(sys.argv[1]) if l.startswith("{")))}
bench = {}
for p in sys.argv[2:]:
    try:
        r = json.load(open(p)); bench[r["candidate"].split("/")[-1]] = r
    except Exception as e:
        print("unreadable", p, e)
print("| candidate | stat | bench ref | bench new | bench x | indep ref | indep new | indep x | diff |")
for f, r in bench.items():
    i = indep.get(f)
    if not r.get("ref_timing") or not i:
        print(f, "no timing", r.get("error")); continue
    br, bn = r["ref_timing"]["samples_ms"], r["new_timing"]["samples_ms"]
    ir, inn = i["ref_samples"], i["new_samples"]
    for name, fn in STATS.items():
        a, b = fn(br) / fn(bn), fn(ir) / fn(inn)
        print(f"| {f} | {name} | {fn(br):.2f} | {fn(bn):.2f} | {a:.3f} | {fn(ir):.2f} | {fn(inn):.2f} | {b:.3f} | {100 * (a - b) / b:+.1f}% |")
    print(f"   bench ref samples: {' '.join(str(round(x)) for x in br)}")
    print(f"   indep ref samples: {' '.join(str(round(x)) for x in ir)}")
    print(f"   bench new samples: {' '.join(str(round(x, 1)) for x in bn[:20])} ...")
