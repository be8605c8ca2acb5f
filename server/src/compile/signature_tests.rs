//! The signature plan's tests: types, constexprs and assumptions read from small files.

use super::*;

fn plans(src: &str) -> Vec<KernelPlan> {
    let tree = crate::model::parse_forest(src);
    let model = FileModel::build(src, &tree);
    plan(&model, &Settings::default(), 8)
}

#[test]
fn types_come_from_the_launch_and_what_it_passes() {
    let src = r#"
import torch
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr, n, scale, mystery, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * scale)

def run(x):
    y = torch.empty(x.shape, dtype=torch.float16)
    n = x.numel()
    k[(1,)](x.half(), y, n, 0.5, some_call(), BLOCK=128, num_warps=8)
"#;
    let p = &plans(src)[0];
    let v = &p.variants[0];
    assert_eq!(v.signature["x_ptr"], "*fp16");
    assert_eq!(v.signature["y_ptr"], "*fp16");
    assert_eq!(v.signature["n"], "i32");
    assert_eq!(v.signature["scale"], "fp32");
    assert_eq!(v.signature["mystery"], "i32");
    assert_eq!(v.constexprs["BLOCK"], json!(128));
    assert_eq!(v.num_warps, Some(8));
    assert_eq!(v.assumed, vec!["`mystery`: an i32 scalar, assumed".to_string()]);
    assert_eq!(v.divisible, vec!["x_ptr".to_string(), "y_ptr".to_string()]);
}

#[test]
fn a_name_reassigned_from_itself_is_followed_to_the_forward_s_input() {
    // `x = x.contiguous()` in a wrapper the forward calls: the `x` on the right is the parameter.
    let src = r#"
import torch
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))

def wrapper(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    k[(1,)](x, y, x.numel(), BLOCK=128)
    return y

class ModelNew(torch.nn.Module):
    def forward(self, x):
        return wrapper(x)

def get_inputs():
    return [torch.randn(64, 64, dtype=torch.float16)]
"#;
    let v = &plans(src)[0].variants[0];
    assert_eq!(v.signature["x_ptr"], "*fp16");
    assert_eq!(v.signature["y_ptr"], "*fp16");
    assert!(v.assumed.is_empty(), "{:?}", v.assumed);
}

#[test]
fn a_scalar_of_the_task_is_not_taken_for_a_tensor() {
    // `s: float` says it; `self.scale = scale` is what the task passed, not a parameter tensor.
    let src = r#"
import torch
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, w_ptr, y_ptr, s, t, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * s * t + tl.load(w_ptr + offs))

def wrapper(x: torch.Tensor, w, s: float, t):
    y = torch.empty_like(x)
    k[(1,)](x, w, y, s, t, BLOCK=128)
    return y

class ModelNew(torch.nn.Module):
    def __init__(self, n, scale):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(n))
        self.scale = scale

    def forward(self, x, s):
        return wrapper(x, self.weight, s, self.scale)
"#;
    let v = &plans(src)[0].variants[0];
    assert_eq!(v.signature["x_ptr"], "*fp32");
    assert_eq!(v.signature["w_ptr"], "*fp32");
    assert_eq!(v.signature["s"], "fp32");
    assert!(v.assumed.iter().any(|a| a.starts_with("`t`")), "{:?}", v.assumed);
}

#[test]
fn other_assumptions_change_every_guess_and_nothing_else() {
    let src = r#"
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr, FLAG: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + n)

def run(x, n):
    k[(1,)](x, n, FLAG=3)
"#;
    let v = &plans(src)[0].variants[0];
    assert_eq!((v.signature["x_ptr"].as_str(), v.signature["n"].as_str()), ("*fp32", "i32"));
    assert_eq!((v.constexprs["BLOCK"].clone(), v.constexprs["FLAG"].clone()), (json!(64), json!(3)));
    let others = v.other_assumptions();
    let sigs: Vec<(&str, &str)> =
        others.iter().map(|o| (o.signature["x_ptr"].as_str(), o.signature["n"].as_str())).collect();
    assert_eq!(sigs, [("*fp16", "i64"), ("*i32", "i32")]);
    for o in &others {
        assert_eq!((o.constexprs["BLOCK"].clone(), o.constexprs["FLAG"].clone()), (json!(128), json!(3)));
        assert_eq!(o.assumed, v.assumed, "the words stay those of the first guess");
    }
}

#[test]
fn an_unknown_parameter_is_a_pointer_only_where_it_is_the_base_of_an_address() {
    let src = r#"
import triton
import triton.language as tl

@triton.jit
def k(X, Y, stride, offset, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    src = X + row * stride + offset + cols
    tl.store(Y + row * stride + cols, tl.load(src))
"#;
    let v = &plans(src)[0].variants[0];
    assert_eq!(v.signature["X"], "*fp32");
    assert_eq!(v.signature["Y"], "*fp32");
    assert_eq!(v.signature["stride"], "i32", "a product is an offset");
    assert_eq!(v.signature["offset"], "i32", "the leftmost term of the sum is the base");
}

#[test]
fn do_not_specialize_keeps_an_integer_a_plain_i32() {
    let src = r#"
import torch
import triton
import triton.language as tl

@triton.jit(do_not_specialize=["n"])
def k(x_ptr, n, m, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), n + m)

def run():
    x = torch.zeros(64)
    k[(1,)](x, 1, 1, BLOCK=64)
"#;
    let v = &plans(src)[0].variants[0];
    assert_eq!(v.signature.get("n").map(String::as_str), Some("i32"), "not turned into a constant");
    assert_eq!(v.constexprs.get("m"), Some(&json!(1)), "Triton's launcher makes a 1 a constant");
}

#[test]
fn autotune_configs_are_each_a_variant_up_to_the_bound() {
    let src = r#"
import triton
import triton.language as tl

@triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=4) for b in [1]] + [
    triton.Config({"BLOCK": 32}, num_warps=2), triton.Config({"BLOCK": 64}, num_stages=2)], key=["n"])
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 0.0)
"#;
    let p = &plans(src)[0];
    assert!(p.variants.iter().all(|v| v.assumed.iter().any(|a| a.contains("`x_ptr`"))), "no launch: assumed");
    let tree = crate::model::parse_forest(src);
    let model = FileModel::build(src, &tree);
    let bounded = plan(&model, &Settings::default(), 1);
    assert_eq!(bounded[0].variants.len(), 1);
    assert_eq!(bounded[0].omitted + 1, p.variants.len() + p.omitted);
}

#[test]
fn a_helper_is_compiled_inside_its_caller() {
    let src = r#"
import triton
import triton.language as tl

@triton.jit
def helper(x):
    return x * 2

@triton.jit
def k(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, helper(tl.load(x_ptr + offs)))
"#;
    let p = plans(src);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].kernel, "k");
    assert!(p[0].functions.contains("helper"));
    assert_eq!(p[0].variants[0].constexprs["BLOCK"], json!(64), "assumed");
}

#[test]
fn a_tensor_made_from_data_has_the_data_s_dtype_or_none() {
    // `torch.tensor(addresses)` holds int64 pointers: never an fp32 pointer on a guess.
    let src = r#"
import torch
import triton
import triton.language as tl

@triton.jit
def k(ptrs, fill, out_ptr):
    p = tl.load(ptrs).to(tl.pointer_type(tl.float16))
    tl.store(out_ptr, tl.load(p) + tl.load(fill))

def run(addrs, out):
    ptrs = torch.tensor(addrs, device="cuda")
    fill = torch.full((1,), 0, device="cuda")
    k[(1,)](ptrs, fill, out)
"#;
    let v = &plans(src)[0].variants[0];
    assert_eq!(v.signature["fill"], "*i64");
    assert!(v.assumed.iter().any(|a| a.starts_with("`ptrs`")), "{:?}", v.assumed);
}

#[test]
fn a_jit_function_passed_by_name_is_compiled_with_its_kernel() {
    let src = r#"
import triton
import triton.language as tl

@triton.jit
def both(a, b):
    return a & b

@triton.jit
def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(out_ptr, tl.reduce(x, 0, combine_fn=both))

def run(x, out):
    k[(1,)](x, out, BLOCK=64)
"#;
    let p = plans(src).into_iter().find(|p| p.kernel == "k").expect("k planned");
    assert!(p.functions.contains("both"), "{:?}", p.functions);
}
