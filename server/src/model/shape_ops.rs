//! The operations of the block-shape interpretation (`shapes.rs`): calls of
//! `tl.*` functions and of tensor methods, with the shapes Triton gives their
//! results and the operand shapes it refuses.

use tree_sitter::Node;

use super::nodes::call_arguments;
use super::shapes::{broadcast, fmt, Interp, ELEMENTWISE, REDUCTIONS, V};
use crate::model::NodeKind;

impl<'a> Interp<'_, 'a> {
    pub(super) fn call(&mut self, n: Node<'a>) -> V {
        let Some(function) = field!(n, "function") else { return V::Unknown };
        let (args, kwargs) = call_arguments(n, self.model.src);
        if function.kind_name() == "identifier" {
            let vals: Vec<V> = args.iter().map(|a| self.eval(*a)).collect();
            for (_, v) in &kwargs {
                self.eval(*v);
            }
            let ints: Option<Vec<i64>> = vals.iter().map(|v| if let V::Int(i) = v { Some(*i) } else { None }).collect();
            let scalars = !vals.is_empty() && vals.iter().all(|v| v.shape() == Some(&[]));
            return match (self.text(function), ints.as_deref()) {
                ("min", Some(i)) if !i.is_empty() => i.iter().min().map(|&m| V::Int(m)).unwrap_or(V::Unknown),
                ("max", Some(i)) if !i.is_empty() => i.iter().max().map(|&m| V::Int(m)).unwrap_or(V::Unknown),
                ("min" | "max", None) if scalars => V::Block(Vec::new()),
                _ => V::Unknown,
            };
        }
        if function.kind_name() != "attribute" {
            return V::Unknown;
        }
        let (Some(object), Some(attr)) = (field!(function, "object"), field!(function, "attribute")) else {
            return V::Unknown;
        };
        let name = self.text(attr);
        if self.is_tl(object) {
            return self.tl_call(n, name, &args, &kwargs);
        }
        let receiver = self.eval(object);
        match receiver {
            V::Block(_) => self.method_call(n, name, receiver, &args, &kwargs),
            _ => {
                for a in args.iter().chain(kwargs.iter().map(|(_, v)| v)) {
                    self.eval(*a);
                }
                V::Unknown
            }
        }
    }

    fn method_call(&mut self, n: Node<'a>, name: &str, recv: V, args: &[Node<'a>], kwargs: &[(String, Node<'a>)]) -> V {
        let vals: Vec<V> = args.iter().map(|a| self.eval(*a)).collect();
        let kw: Vec<(String, V)> = kwargs.iter().map(|(k, v)| (k.clone(), self.eval(*v))).collect();
        let V::Block(shape) = recv else { return V::Unknown };
        match name {
            "to" | "cast" => V::Block(shape),
            "trans" | "permute" => permute(&shape, &vals),
            "reshape" | "view" => self.reshape(n, &shape, &vals),
            "broadcast_to" => self.broadcast_to(n, &shape, &vals),
            _ if REDUCTIONS.contains(&name) => reduce(&shape, vals.first(), &kw),
            _ => V::Unknown,
        }
    }

    fn tl_call(&mut self, n: Node<'a>, name: &str, args: &[Node<'a>], kwargs: &[(String, Node<'a>)]) -> V {
        let vals: Vec<V> = args.iter().map(|a| self.eval(*a)).collect();
        let kw: Vec<(String, V)> = kwargs.iter().map(|(k, v)| (k.clone(), self.eval(*v))).collect();
        let arg = |i: usize, key: &str| -> V {
            vals.get(i)
                .cloned()
                .or_else(|| kw.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()))
                .unwrap_or(V::Unknown)
        };
        let has = |i: usize, key: &str| vals.len() > i || kw.iter().any(|(k, _)| k == key);
        match name {
            "program_id" | "num_programs" | "cdiv" => match (arg(0, "x"), arg(1, "div"), name) {
                (V::Int(a), V::Int(b), "cdiv") if b > 0 => {
                    a.checked_add(b - 1).map(|x| V::Int(x.div_euclid(b))).unwrap_or(V::Unknown)
                }
                _ => V::Block(Vec::new()),
            },
            "arange" => match (arg(0, "start"), arg(1, "end")) {
                (V::Int(a), V::Int(b)) if b > a => b.checked_sub(a).map(|n| V::Block(vec![n])).unwrap_or(V::Unknown),
                _ => V::Unknown,
            },
            "zeros" | "full" | "empty" => {
                let shape =
                    args.first().copied().or_else(|| kwargs.iter().find(|(k, _)| k == "shape").map(|(_, v)| *v));
                shape.and_then(|s| self.shape_of(s)).map(V::Block).unwrap_or(V::Unknown)
            }
            "zeros_like" | "full_like" | "empty_like" => match arg(0, "input") {
                V::Block(s) => V::Block(s),
                _ => V::Unknown,
            },
            "load" => {
                let (ptr, mask, other) = (arg(0, "pointer"), arg(1, "mask"), arg(2, "other"));
                let Some(p) = ptr.shape() else { return V::Unknown };
                if p.is_empty() {
                    for (what, v) in [("mask", &mask), ("other", &other)] {
                        if let Some(s) = v.shape().filter(|s| !s.is_empty()) {
                            let msg =
                                format!("`tl.load` from a scalar pointer with a block {what} of shape {}", fmt(s));
                            self.conflict(n, msg);
                            return V::Unknown;
                        }
                    }
                    return if has(1, "mask") && mask.shape().is_none() { V::Unknown } else { V::Block(Vec::new()) };
                }
                let present: Vec<&V> = [(&ptr, true), (&mask, has(1, "mask")), (&other, has(2, "other"))]
                    .into_iter()
                    .filter(|(_, h)| *h)
                    .map(|(v, _)| v)
                    .collect();
                self.broadcast_values(n, &present, "`tl.load` (pointer, mask, other)")
            }
            "store" | "atomic_add" | "atomic_max" | "atomic_min" | "atomic_and" | "atomic_or" | "atomic_xor"
            | "atomic_xchg" => self.store(
                n,
                name,
                &arg(0, "pointer"),
                &arg(1, if name == "store" { "value" } else { "val" }),
                has(2, "mask").then(|| arg(2, "mask")),
            ),
            "dot" => self.dot(n, &arg(0, "input"), &arg(1, "other"), has(2, "acc").then(|| arg(2, "acc"))),
            "trans" | "permute" => match arg(0, "input") {
                V::Block(s) => {
                    let dims = if vals.len() > 1 {
                        vals[1..].to_vec()
                    } else {
                        kw.iter().filter(|(k, _)| k == "dims").map(|(_, v)| v.clone()).collect()
                    };
                    permute(&s, &dims)
                }
                _ => V::Unknown,
            },
            "reshape" | "view" => match arg(0, "input") {
                V::Block(s) => {
                    let dims = if vals.len() > 1 {
                        vals[1..].to_vec()
                    } else {
                        kw.iter().filter(|(k, _)| k == "shape").map(|(_, v)| v.clone()).collect()
                    };
                    self.reshape(n, &s, &dims)
                }
                _ => V::Unknown,
            },
            "broadcast_to" => match arg(0, "input") {
                V::Block(s) => {
                    let dims = if vals.len() > 1 {
                        vals[1..].to_vec()
                    } else {
                        kw.iter().filter(|(k, _)| k == "shape").map(|(_, v)| v.clone()).collect()
                    };
                    self.broadcast_to(n, &s, &dims)
                }
                _ => V::Unknown,
            },
            "expand_dims" => match (arg(0, "input"), arg(1, "axis")) {
                (V::Block(mut s), V::Int(a)) => {
                    let rank = s.len() as i64 + 1;
                    let a = if a < 0 { a + rank } else { a };
                    if !(0..rank).contains(&a) {
                        return V::Unknown;
                    }
                    s.insert(a as usize, 1);
                    V::Block(s)
                }
                _ => V::Unknown,
            },
            "where" | "maximum" | "minimum" | "clamp" | "fma" | "fdiv" | "div_rn" | "umulhi" => {
                let refs: Vec<&V> = vals.iter().collect();
                self.broadcast_values(n, &refs, &format!("`tl.{name}`"))
            }
            _ if REDUCTIONS.contains(&name) => match vals.first() {
                Some(V::Block(s)) => reduce(s, vals.get(1), &kw),
                _ => V::Unknown,
            },
            _ if ELEMENTWISE.contains(&name) => match vals.first().or(kw.first().map(|(_, v)| v)) {
                Some(V::Block(s)) => V::Block(s.clone()),
                _ => V::Unknown,
            },
            _ => V::Unknown,
        }
    }

    fn store(&mut self, n: Node, name: &str, ptr: &V, val: &V, mask: Option<V>) -> V {
        let (Some(p), Some(v)) = (ptr.shape(), val.shape()) else { return V::Unknown };
        if p.is_empty() {
            if !v.is_empty() {
                let msg = format!("`tl.{name}` of a block of shape {} through a scalar pointer", fmt(v));
                self.conflict(n, msg);
            }
            return V::Unknown;
        }
        let mut all = vec![ptr, val];
        if let Some(m) = &mask {
            all.push(m);
        }
        let V::Block(b) = self.broadcast_values(n, &all, &format!("`tl.{name}` (pointer, value, mask)")) else {
            return V::Unknown;
        };
        if b != p {
            let msg =
                format!("`tl.{name}` writes a block of shape {} through a pointer block of shape {}", fmt(&b), fmt(p));
            self.conflict(n, msg);
        }
        V::Unknown
    }

    fn dot(&mut self, n: Node, a: &V, b: &V, acc: Option<V>) -> V {
        let (Some(x), Some(y)) = (a.shape(), b.shape()) else { return V::Unknown };
        let (x, y) = (x.to_vec(), y.to_vec());
        if x.len() != y.len() || !(2..=3).contains(&x.len()) {
            self.conflict(n, format!("`tl.dot` takes two 2-D or two 3-D blocks, not {} and {}", fmt(&x), fmt(&y)));
            return V::Unknown;
        }
        let r = x.len();
        if x[r - 1] != y[r - 2] {
            let msg =
                format!("`tl.dot` inner dimensions differ: {} @ {} ({} != {})", fmt(&x), fmt(&y), x[r - 1], y[r - 2]);
            self.conflict(n, msg);
            return V::Unknown;
        }
        if r == 3 && x[0] != y[0] {
            self.conflict(n, format!("`tl.dot` batch dimensions differ: {} @ {}", fmt(&x), fmt(&y)));
            return V::Unknown;
        }
        if x[r - 1] < MIN_DOT_K {
            let msg = format!(
                "`tl.dot` over K = {} ({} @ {}): Triton needs K >= {MIN_DOT_K} (8 for fp32, 16 for fp16/bf16, 32 for 8-bit types)",
                x[r - 1],
                fmt(&x),
                fmt(&y)
            );
            self.conflict(n, msg);
            return V::Unknown;
        }
        let mut out = x[..r - 1].to_vec();
        out.push(y[r - 1]);
        if let Some(s) = acc.as_ref().and_then(|a| a.shape()) {
            if s != out.as_slice() {
                let msg = format!("`tl.dot` accumulator has shape {}, the product {}", fmt(s), fmt(&out));
                self.conflict(n, msg);
                return V::Unknown;
            }
        }
        V::Block(out)
    }

    fn reshape(&mut self, n: Node, shape: &[i64], dims: &[V]) -> V {
        let Some(target) = dims_of(dims) else { return V::Unknown };
        let count = |s: &[i64]| s.iter().try_fold(1i64, |acc, &d| acc.checked_mul(d));
        let (Some(from), Some(to)) = (count(shape), count(&target)) else { return V::Unknown };
        if from != to {
            let msg = format!("reshape of {} ({from} elements) into {} ({to} elements)", fmt(shape), fmt(&target));
            self.conflict(n, msg);
            return V::Unknown;
        }
        V::Block(target)
    }

    fn broadcast_to(&mut self, n: Node, shape: &[i64], dims: &[V]) -> V {
        let Some(target) = dims_of(dims) else { return V::Unknown };
        match broadcast(shape, &target) {
            Ok(b) if b == target => V::Block(target),
            _ => {
                self.conflict(n, format!("`broadcast_to` of {} into {}", fmt(shape), fmt(&target)));
                V::Unknown
            }
        }
    }
}

/// Triton 3.9's smallest reduction dimension of `tl.dot` for any operand
/// type it takes on NVIDIA GPUs (fp32's 8; 16-bit types need 16, 8-bit 32).
const MIN_DOT_K: i64 = 8;

/// Dimensions given as varargs (`reshape(x, A, B)`) or one tuple (`reshape(x, (A, B))`).
fn dims_of(dims: &[V]) -> Option<Vec<i64>> {
    let flat: Vec<&V> = match dims {
        [V::Tuple(parts)] => parts.iter().collect(),
        _ => dims.iter().collect(),
    };
    if flat.is_empty() {
        return None;
    }
    flat.iter().map(|v| if let V::Int(i) = v { Some(*i) } else { None }).collect()
}

fn permute(shape: &[i64], dims: &[V]) -> V {
    if dims.is_empty() {
        return if shape.len() == 2 { V::Block(vec![shape[1], shape[0]]) } else { V::Unknown };
    }
    let Some(order) = dims_of(dims) else { return V::Unknown };
    if order.len() != shape.len() {
        return V::Unknown;
    }
    let out: Option<Vec<i64>> =
        order.iter().map(|&i| usize::try_from(i).ok().and_then(|i| shape.get(i).copied())).collect();
    out.map(V::Block).unwrap_or(V::Unknown)
}

fn reduce(shape: &[i64], axis: Option<&V>, kw: &[(String, V)]) -> V {
    let axis = axis.cloned().or_else(|| kw.iter().find(|(k, _)| k == "axis").map(|(_, v)| v.clone()));
    let keep = kw.iter().find(|(k, _)| k == "keep_dims").map(|(_, v)| v.clone());
    let keep = match keep {
        None => false,
        Some(V::Int(i)) => i != 0,
        Some(_) => return V::Unknown,
    };
    if kw.iter().any(|(k, _)| k == "return_indices") {
        return V::Unknown;
    }
    match axis {
        None => V::Block(if keep { vec![1; shape.len()] } else { Vec::new() }),
        Some(V::Int(a)) => {
            let rank = shape.len() as i64;
            let a = if a < 0 { a + rank } else { a };
            if !(0..rank).contains(&a) {
                return V::Unknown;
            }
            let mut out = shape.to_vec();
            if keep {
                out[a as usize] = 1;
            } else {
                out.remove(a as usize);
            }
            V::Block(out)
        }
        _ => V::Unknown,
    }
}
