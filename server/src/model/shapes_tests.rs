use super::*;
use crate::model::shape_configs::constexpr_configs;

/// The conflicts of kernel `name` under each of its configurations, as (line text, message).
fn conflicts(src: &str, name: &str) -> Vec<(String, String)> {
    let tree = crate::model::parse_forest(src);
    let m = FileModel::build(src, &tree);
    let k = m.kernel(name).expect(name);
    let scalars = m.launches_of_kernel(k).next().is_some();
    let mut out = Vec::new();
    for c in constexpr_configs(k, &m) {
        for x in shape_conflicts(k, &m, &c.values, scalars) {
            out.push((src[x.range.start..x.range.end].to_string(), x.message));
        }
    }
    out
}

const HEAD: &str = "import triton\nimport triton.language as tl\n\n";

#[test]
fn keep_dims_expand_dims_and_broadcast_to_follow_triton() {
    let src = format!(
        "{HEAD}@triton.jit\ndef k(x_ptr, out_ptr, BM: tl.constexpr):\n    \
         rm = tl.arange(0, BM)\n    \
         t = tl.load(x_ptr + rm[:, None] * BM + rm[None, :])\n    \
         s = tl.sum(t, axis=1, keep_dims=True)\n    \
         tl.store(out_ptr + rm[:, None], s)\n    \
         e = tl.expand_dims(rm, 0)\n    \
         tl.store(out_ptr + e, e)\n    \
         ok = tl.broadcast_to(rm, (BM, BM))\n    \
         bad = tl.broadcast_to(rm[:, None], (2 * BM, BM))\n\n\
         def run(x):\n    k[(1,)](x, x, BM=16)\n"
    );
    let found = conflicts(&src, "k");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "tl.broadcast_to(rm[:, None], (2 * BM, BM))");
    assert_eq!(found[0].1, "`broadcast_to` of [16, 1] into [32, 16]");
}

#[test]
fn a_dot_accumulator_of_another_shape_and_a_block_stored_through_a_scalar_pointer() {
    let src = format!(
        "{HEAD}@triton.jit\ndef k(a_ptr, out_ptr, B: tl.constexpr):\n    \
         r = tl.arange(0, B)\n    \
         a = tl.load(a_ptr + r[:, None] * B + r[None, :])\n    \
         acc = tl.zeros((B, 2 * B), dtype=tl.float32)\n    \
         acc = tl.dot(a, a, acc)\n    \
         tl.store(out_ptr, tl.sum(a, axis=0))\n    \
         tl.store(out_ptr, tl.sum(a))\n\n\
         def run(x):\n    k[(1,)](x, x, B=16)\n"
    );
    let found = conflicts(&src, "k");
    let messages: Vec<&str> = found.iter().map(|(_, m)| m.as_str()).collect();
    assert_eq!(
        messages,
        [
            "`tl.dot` accumulator has shape [16, 32], the product [16, 16]",
            "`tl.store` of a block of shape [16] through a scalar pointer",
        ]
    );
}

#[test]
fn unknown_values_loops_that_change_a_shape_and_helpers_stay_silent() {
    let src = format!(
        "{HEAD}@triton.jit\ndef helper(a, b):\n    return tl.dot(a, b)\n\n\
         @triton.jit\ndef k(x_ptr, n, B: tl.constexpr):\n    \
         r = tl.arange(0, B)\n    \
         x = tl.zeros((B,), dtype=tl.float32)\n    \
         for i in range(n):\n        \
         x = tl.zeros((2 * B,), dtype=tl.float32)\n    \
         y = x + r\n    \
         z = helper(r, r) + r\n    \
         w = tl.load(x_ptr + tl.arange(0, n))\n    \
         tl.store(x_ptr + r, w + z)\n\n\
         def run(x, block):\n    k[(1,)](x, x.numel(), B=16)\n    k[(1,)](x, x.numel(), B=block)\n"
    );
    assert_eq!(conflicts(&src, "k"), Vec::<(String, String)>::new());
    assert_eq!(conflicts(&src, "helper"), Vec::<(String, String)>::new());
}

#[test]
fn configurations_come_from_launches_autotune_and_defaults_never_heuristics() {
    let src = format!(
        "{HEAD}@triton.autotune(configs=[triton.Config({{'BM': 32}}), triton.Config({{'BM': 64}})], key=['n'])\n\
         @triton.heuristics({{'EVEN': lambda args: args['n'] % 2 == 0}})\n\
         @triton.jit\ndef k(x_ptr, n, BM: tl.constexpr, BN: tl.constexpr, EVEN: tl.constexpr = 1, D: tl.constexpr = 8):\n    pass\n\n\
         def run(x, n):\n    k[(1,)](x, n, BN=128)\n    k[(1,)](x, n, BN=n)\n\n\
         @triton.jit\ndef p(x_ptr, B: tl.constexpr = 4):\n    pass\n\n\
         def go(x):\n    p[(1,)](x, 16)\n    p[(1,)](x)\n"
    );
    let tree = crate::model::parse_forest(&src);
    let m = FileModel::build(&src, &tree);
    let sorted = |c: &crate::model::shape_configs::ConstexprConfig| {
        let mut v: Vec<(String, i64)> = c.values.iter().map(|(k, v)| (k.clone(), *v)).collect();
        v.sort();
        v
    };
    let k: Vec<Vec<(String, i64)>> = constexpr_configs(m.kernel("k").unwrap(), &m).iter().map(sorted).collect();
    let kv = |pairs: &[(&str, i64)]| pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect::<Vec<_>>();
    // each autotune config beside each launch; BN=n is unknown, EVEN is the heuristic's, never its default
    assert_eq!(
        k,
        vec![
            kv(&[("BM", 32), ("BN", 128), ("D", 8)]),
            kv(&[("BM", 32), ("D", 8)]),
            kv(&[("BM", 64), ("BN", 128), ("D", 8)]),
            kv(&[("BM", 64), ("D", 8)]),
        ]
    );
    // a positional value at the launch, else the default
    let p: Vec<Vec<(String, i64)>> = constexpr_configs(m.kernel("p").unwrap(), &m).iter().map(sorted).collect();
    assert_eq!(p, vec![kv(&[("B", 16)]), kv(&[("B", 4)])]);
}
