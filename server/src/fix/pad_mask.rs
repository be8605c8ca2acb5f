//! KL004's rewrite for an arange bound that is only known at run time:
//! `cols = tl.arange(0, H)` with `H` from a runtime parameter `N_COLS`
//! becomes `tl.arange(0, BLOCK_N_COLS)` with a new `BLOCK_N_COLS: tl.constexpr`
//! parameter, every load and store addressed through `cols` gets the mask
//! `cols < H`, and every launch passes `BLOCK_N_COLS=triton.next_power_of_2(n)`.
//!
//! The padded lanes must not change the result. Stores are masked, so what
//! they hold matters only where it reaches a reduction: each masked load gets
//! an `other=` chosen so that, carried through the kernel's arithmetic, the
//! padded lanes hold the reduction's identity where they reach it (`-inf` for
//! `max`, `+inf` for `min`, `0` for `sum`). The kernel is read statement by
//! statement; a padded value reaching anything this cannot follow (a loop that
//! reassigns it, an unknown call, `.shape`, an index) means no fix.

use std::collections::HashMap;

use tree_sitter::Node;

use crate::diagnostic::{apply_edits, Applicability, Edit, Fix};
use crate::model;
use crate::model::field;
use crate::model::NodeKind;
use crate::model::{range_of, FileModel, KCall, Kernel};
use crate::text::TextRange;

/// What the padded lanes of a value hold.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pad {
    /// No padded lanes (a scalar, or a tensor that does not come from the padded block);
    /// the value itself when it is a literal.
    Clean(Option<f64>),
    /// Every padded lane holds this value.
    Lanes(f64),
    /// Padded lanes hold something not known here (the offsets themselves, say).
    Dirty,
}

/// Values tried for a masked load's `other=`: zero first (sums), then the identities of max and min.
const OTHERS: [f64; 3] = [0.0, f64::NEG_INFINITY, f64::INFINITY];

/// The fix for the runtime parameter `param` of `k`, bounding the aranges `aranges`.
pub fn fix<'a>(model: &FileModel<'a>, k: &Kernel<'a>, param: &str, aranges: &[&KCall]) -> Option<Fix> {
    let src = model.src;
    let tl = model.tl_aliases.first()?.as_str();
    let triton = model.triton_aliases.first()?.as_str();
    let index = k.params.iter().position(|p| p.name == param && !p.constexpr)?;
    let last = k.params.last()?;
    if !matches!(last.node.kind_name(), "identifier" | "typed_parameter") {
        return None; // a default or a splat last: a new parameter cannot follow it
    }
    let block = format!("BLOCK_{}", param.to_uppercase());
    let taken = |name: &str| k.param(name).is_some() || k.assigns.iter().any(|a| a.target == name);
    if taken(&block) {
        return None;
    }
    let launches: Vec<_> = model.launches.iter().filter(|l| l.kernel == k.name).collect();
    if launches.is_empty() {
        return None; // launched elsewhere: a new parameter would break those launches
    }

    // Each arange is the whole value of a once-assigned name, outside loops: `cols = tl.arange(0, H)`.
    let mut padded: Vec<(String, String, Node)> = Vec::new(); // (variable, bound text, bound node)
    let arange_ids: Vec<usize> = aranges.iter().map(|a| a.node.id()).collect();
    for a in aranges {
        let start = a.arg(0, "start")?;
        let end = a.arg(1, "end")?;
        if model.text(start).trim() != "0" {
            return None;
        }
        let assign = k.assigns.iter().find(|x| x.value.id() == a.node.id())?;
        if assign.augmented
            || !assign.loops.is_empty()
            || k.assigns.iter().filter(|x| x.target == assign.target).count() != 1
        {
            return None;
        }
        let bound = model.text(end).trim();
        let bound = if end.kind_name() == "identifier" || end.kind_name() == "integer" {
            bound.to_string()
        } else {
            format!("({bound})")
        };
        padded.push((assign.target.clone(), bound, end));
    }

    // The loads and stores addressed through the padded offsets.
    let accesses: Vec<(&KCall, Vec<usize>)> = k
        .calls
        .iter()
        .filter(|c| c.is_tl("load") || c.is_tl("store"))
        .filter_map(|c| {
            let deps = k.deps(c.arg(0, "pointer")?, src);
            let vars: Vec<usize> = (0..padded.len()).filter(|&i| deps.contains(&padded[i].0)).collect();
            (!vars.is_empty()).then_some((c, vars))
        })
        .collect();
    let loads: Vec<&KCall> = accesses.iter().filter(|(c, _)| c.is_tl("load")).map(|(c, _)| *c).collect();
    if loads.len() > 4 {
        return None; // 3^n combinations of `other=`: keep it small
    }
    let given: Vec<Option<Pad>> = loads.iter().map(|l| l.arg(2, "other").map(|o| literal(model, o))).collect();
    let chosen = choose_others(model, k, &padded, &arange_ids, &accesses, &loads, &given)?;

    // The edits.
    let mut edits = vec![Edit {
        range: TextRange::new(last.node.end_byte(), last.node.end_byte()),
        new_text: format!(", {block}: {tl}.constexpr"),
    }];
    for (_, _, end) in &padded {
        edits.push(Edit { range: range_of(*end), new_text: block.clone() });
    }
    edits.extend(mask_edits(model, &padded, &accesses, &loads, &given, &chosen)?);
    for l in &launches {
        let value = l.args.get(index).copied().or_else(|| l.kwarg(param))?;
        let at = closing_paren(l.node)?;
        edits.push(Edit {
            range: TextRange::new(at, at),
            new_text: format!(", {block}={triton}.next_power_of_2({})", model.text(value)),
        });
    }

    verify(model, k, &launches, &edits, &block, padded.len())?;
    let values: Vec<&str> = launches
        .iter()
        .filter_map(|l| l.args.get(index).copied().or_else(|| l.kwarg(param)))
        .map(|v| model.text(v))
        .collect();
    let value = if values.windows(2).all(|w| w[0] == w[1]) { values[0] } else { "..." };
    Some(Fix {
        title: format!(
            "Pad to `{block}: {tl}.constexpr` = `{triton}.next_power_of_2({value})` and mask {} {}",
            accesses.len(),
            if accesses.len() == 1 { "access" } else { "loads and stores" }
        )
        .into(),
        applicability: Applicability::NeedsReview,
        edits,
    })
}

/// Verifies the fix: each top-level statement the edits touch (the kernel's, and
/// those of its launches) parses on its own once edited, and every arange
/// that had the runtime bound now has the constexpr one. Statement by
/// statement, not the whole file: what the fix is then depends on the
/// kernel and its launch sites alone (a syntax error elsewhere does not
/// take it away, and the incremental analysis may keep it while that
/// code changes), and a large file is not parsed again for each fix.
fn verify(
    model: &FileModel,
    k: &Kernel,
    launches: &[&crate::model::Launch],
    edits: &[Edit],
    block: &str,
    padded: usize,
) -> Option<()> {
    let src = model.src;
    let mut statements: Vec<Node> = Vec::new();
    for n in std::iter::once(k.node).chain(launches.iter().map(|l| l.node)) {
        let statement = model.tree.root_at(n.start_byte()).child_with_descendant(n)?;
        if !statements.iter().any(|s| s.id() == statement.id()) {
            statements.push(statement);
        }
    }
    let (mut placed, mut kernel_fixed) = (0, None);
    for statement in &statements {
        let r = range_of(*statement);
        let local: Vec<Edit> = edits
            .iter()
            .filter(|e| r.start <= e.range.start && e.range.end <= r.end)
            .map(|e| Edit {
                range: TextRange::new(e.range.start - r.start, e.range.end - r.start),
                new_text: e.new_text.clone(),
            })
            .collect();
        placed += local.len();
        let fixed = apply_edits(src.get(r.start..r.end)?, &local).ok()?;
        let tree = model::parse_forest(&fixed);
        if tree.has_error() {
            return None;
        }
        if r.contains_range(range_of(k.node)) {
            kernel_fixed = Some((fixed, tree));
        }
    }
    if placed != edits.len() {
        return None;
    }
    let (fixed, tree) = kernel_fixed?;
    let after = FileModel::build_piece(&fixed, &tree, model);
    let nk = after.kernels.iter().find(|x| x.name == k.name)?;
    if !nk.is_constexpr(block)
        || nk.tl_calls("arange").filter(|c| c.arg(1, "end").is_some_and(|e| after.text(e) == block)).count() != padded
    {
        return None;
    }
    Some(())
}

/// The masks (`var < bound`, joined to a mask already there) and the chosen
/// `other=` of each load and store addressed through the padded offsets.
fn mask_edits(
    model: &FileModel,
    padded: &[(String, String, Node)],
    accesses: &[(&KCall, Vec<usize>)],
    loads: &[&KCall],
    given: &[Option<Pad>],
    chosen: &[f64],
) -> Option<Vec<Edit>> {
    let mut edits = Vec::new();
    for (c, vars) in accesses {
        let mask = vars.iter().map(|&i| format!("{} < {}", padded[i].0, padded[i].1)).collect::<Vec<_>>().join(" & ");
        let mask_index = if c.is_tl("load") { 1 } else { 2 };
        let mut insert = String::new();
        match c.arg(mask_index, "mask") {
            Some(old) => {
                edits.push(Edit { range: range_of(old), new_text: format!("({}) & ({mask})", model.text(old)) })
            }
            None => insert.push_str(&format!(", mask={mask}")),
        }
        if let Some(li) = loads.iter().position(|l| l.node.id() == c.node.id()) {
            if given[li].is_none() {
                insert.push_str(&format!(", other={}", python_float(chosen[li])));
            }
        }
        if !insert.is_empty() {
            let at = closing_paren(c.node)?;
            edits.push(Edit { range: TextRange::new(at, at), new_text: insert });
        }
    }
    Some(edits)
}

/// KL004's rewrite for a literal length that is not a power of two:
/// `cols = tl.arange(0, 48)` becomes `tl.arange(0, 64)` and every load and
/// store addressed through `cols` gets the mask `cols < 48` (and the `other=`
/// under which the padded lanes change no reduction), as [`fix`] does for a
/// runtime bound. `None` where the padded lanes cannot be followed.
pub(crate) fn fix_literal<'a>(model: &FileModel<'a>, k: &Kernel<'a>, arange: &KCall<'a>) -> Option<Fix> {
    let src = model.src;
    let (start, end) = (arange.arg(0, "start")?, arange.arg(1, "end")?);
    let (s, e) = (model::parse_int(model.text(start).trim())?, model::parse_int(model.text(end).trim())?);
    let len = e.checked_sub(s).filter(|l| *l > 0)?;
    let padded_len = (len as u64).next_power_of_two() as i64;
    if padded_len == len {
        return None;
    }
    let assign = k.assigns.iter().find(|x| x.value.id() == arange.node.id())?;
    if assign.augmented
        || !assign.loops.is_empty()
        || k.assigns.iter().filter(|x| x.target == assign.target).count() != 1
    {
        return None;
    }
    let padded = vec![(assign.target.clone(), e.to_string(), end)];
    let accesses: Vec<(&KCall, Vec<usize>)> = k
        .calls
        .iter()
        .filter(|c| c.is_tl("load") || c.is_tl("store"))
        .filter(|c| c.arg(0, "pointer").is_some_and(|p| k.deps(p, src).contains(&assign.target)))
        .map(|c| (c, vec![0]))
        .collect();
    let loads: Vec<&KCall> = accesses.iter().filter(|(c, _)| c.is_tl("load")).map(|(c, _)| *c).collect();
    if accesses.is_empty() || loads.len() > 4 {
        return None;
    }
    let given: Vec<Option<Pad>> = loads.iter().map(|l| l.arg(2, "other").map(|o| literal(model, o))).collect();
    let chosen = choose_others(model, k, &padded, &[arange.node.id()], &accesses, &loads, &given)?;
    let mut edits = vec![Edit { range: range_of(end), new_text: (s + padded_len).to_string() }];
    edits.extend(mask_edits(model, &padded, &accesses, &loads, &given, &chosen)?);
    // Verify: the kernel's statement parses once edited, and its arange has the padded length.
    let statement = model.tree.root_at(k.node.start_byte()).child_with_descendant(k.node)?;
    let r = range_of(statement);
    let local: Vec<Edit> = edits
        .iter()
        .filter(|x| r.start <= x.range.start && x.range.end <= r.end)
        .map(|x| Edit {
            range: TextRange::new(x.range.start - r.start, x.range.end - r.start),
            new_text: x.new_text.clone(),
        })
        .collect();
    if local.len() != edits.len() {
        return None;
    }
    let fixed = apply_edits(src.get(r.start..r.end)?, &local).ok()?;
    let tree = model::parse_forest(&fixed);
    if tree.has_error() {
        return None;
    }
    let after = FileModel::build_piece(&fixed, &tree, model);
    let nk = after.kernels.iter().find(|x| x.name == k.name)?;
    let lengths: Vec<i64> = nk
        .tl_calls("arange")
        .filter_map(|c| {
            Some(
                model::parse_int(after.text(c.arg(1, "end")?).trim())?
                    - model::parse_int(after.text(c.arg(0, "start")?).trim())?,
            )
        })
        .collect();
    if !lengths.contains(&padded_len) {
        return None;
    }
    Some(Fix {
        title: format!(
            "Pad `tl.arange({s}, {e})` to {padded_len} lanes and mask {} {}",
            accesses.len(),
            if accesses.len() == 1 { "access" } else { "loads and stores" }
        )
        .into(),
        applicability: Applicability::NeedsReview,
        edits,
    })
}

/// An `other=` per load (the given one where there is one) under which no padded lane changes a reduction.
fn choose_others<'a>(
    model: &FileModel<'a>,
    k: &Kernel<'a>,
    padded: &[(String, String, Node)],
    arange_ids: &[usize],
    accesses: &[(&KCall, Vec<usize>)],
    loads: &[&KCall],
    given: &[Option<Pad>],
) -> Option<Vec<f64>> {
    let free: Vec<usize> = (0..loads.len()).filter(|&i| given[i].is_none()).collect();
    let combos = 3usize.pow(free.len() as u32);
    for mut n in 0..combos {
        let mut others: Vec<Pad> = given.iter().map(|g| g.unwrap_or(Pad::Lanes(0.0))).collect();
        for &i in &free {
            others[i] = Pad::Lanes(OTHERS[n % 3]);
            n /= 3;
        }
        let mut eval = Eval {
            model,
            calls: k.calls.iter().map(|c| (c.node.id(), c)).collect(),
            padded_vars: padded.iter().map(|p| p.0.clone()).collect(),
            aranges: arange_ids.to_vec(),
            loads: loads.iter().zip(&others).map(|(l, p)| (l.node.id(), *p)).collect(),
            masked: accesses.iter().map(|(c, _)| c.node.id()).collect(),
            env: HashMap::new(),
            in_control: 0,
        };
        let body = field!(k.node, "body")?;
        if eval.block(body).is_ok() {
            return Some(others.iter().map(|p| if let Pad::Lanes(v) = p { *v } else { 0.0 }).collect());
        }
    }
    None
}

fn literal(model: &FileModel, node: Node) -> Pad {
    let text: String = model.text(node).chars().filter(|c| !c.is_whitespace()).collect();
    let v = match text.as_str() {
        "-float(\"inf\")" | "float(\"-inf\")" | "-float('inf')" | "float('-inf')" => Some(f64::NEG_INFINITY),
        "float(\"inf\")" | "float('inf')" => Some(f64::INFINITY),
        t => t.parse::<f64>().ok(),
    };
    v.map(Pad::Lanes).unwrap_or(Pad::Dirty)
}

fn python_float(v: f64) -> String {
    if v == f64::NEG_INFINITY {
        "-float(\"inf\")".to_string()
    } else if v == f64::INFINITY {
        "float(\"inf\")".to_string()
    } else {
        format!("{v:?}")
    }
}

/// Offset just after a call's last argument (where `, name=value` goes), unless it has a splat.
fn closing_paren(call: Node) -> Option<usize> {
    let args = field!(call, "arguments")?;
    let mut c = args.walk();
    let children: Vec<Node> = args.named_children(&mut c).collect();
    if children.iter().any(|a| matches!(a.kind_name(), "list_splat" | "dictionary_splat")) {
        return None;
    }
    Some(children.last().map(|l| l.end_byte()).unwrap_or(args.start_byte() + 1))
}

struct Eval<'m, 'a> {
    model: &'m FileModel<'a>,
    calls: HashMap<usize, &'m KCall<'a>>,
    padded_vars: Vec<String>,
    /// The arange calls that are padded.
    aranges: Vec<usize>,
    /// The masked loads, with what their padded lanes hold.
    loads: HashMap<usize, Pad>,
    masked: Vec<usize>,
    env: HashMap<String, Pad>,
    in_control: usize,
}

type R<T> = Result<T, ()>;

impl Eval<'_, '_> {
    fn block(&mut self, block: Node) -> R<()> {
        let mut c = block.walk();
        let stmts: Vec<Node> = block.named_children(&mut c).collect();
        for s in stmts {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn clean(&mut self, n: Node) -> R<()> {
        match self.expr(n)? {
            Pad::Clean(_) => Ok(()),
            _ => Err(()),
        }
    }

    fn stmt(&mut self, s: Node) -> R<()> {
        match s.kind_name() {
            "expression_statement" => {
                let mut c = s.walk();
                let kids: Vec<Node> = s.named_children(&mut c).collect();
                for e in kids {
                    match e.kind_name() {
                        "assignment" => self.assign(e)?,
                        "augmented_assignment" => {
                            let target = field!(e, "left").ok_or(())?;
                            self.clean(target)?;
                            self.clean(field!(e, "right").ok_or(())?)?;
                        }
                        _ => {
                            self.expr(e)?;
                        }
                    }
                }
                Ok(())
            }
            "if_statement" | "while_statement" | "elif_clause" => {
                self.clean(field!(s, "condition").ok_or(())?)?;
                self.in_control += 1;
                let mut c = s.walk();
                let kids: Vec<Node> = s.named_children(&mut c).collect();
                for kid in kids {
                    match kid.kind_name() {
                        "block" => self.block(kid)?,
                        "elif_clause" | "else_clause" => self.stmt(kid)?,
                        _ => {}
                    }
                }
                self.in_control -= 1;
                Ok(())
            }
            "else_clause" => {
                let body = field!(s, "body").ok_or(())?;
                self.block(body)
            }
            "for_statement" => {
                self.clean(field!(s, "right").ok_or(())?)?;
                if let Some(left) = field!(s, "left") {
                    let name = self.model.text(left).to_string();
                    self.env.insert(name, Pad::Clean(None));
                }
                self.in_control += 1;
                let r = self.block(field!(s, "body").ok_or(())?);
                self.in_control -= 1;
                r
            }
            "return_statement" => match s.named_child(0) {
                Some(v) => self.clean(v),
                None => Ok(()),
            },
            "pass_statement" | "break_statement" | "continue_statement" | "comment" => Ok(()),
            _ => Err(()),
        }
    }

    fn assign(&mut self, e: Node) -> R<()> {
        let left = field!(e, "left").ok_or(())?;
        let Some(right) = field!(e, "right") else { return Ok(()) }; // a bare annotation
        let v = self.expr(right)?;
        if left.kind_name() != "identifier" {
            return if matches!(v, Pad::Clean(_)) { Ok(()) } else { Err(()) };
        }
        let name = self.model.text(left).to_string();
        let was = self.env.get(&name).copied().unwrap_or(Pad::Clean(None));
        if self.in_control > 0 && (!matches!(v, Pad::Clean(_)) || !matches!(was, Pad::Clean(_))) {
            return Err(()); // padded values reassigned under control flow: not followed
        }
        self.env.insert(name, v);
        Ok(())
    }

    fn expr(&mut self, n: Node) -> R<Pad> {
        let text = self.model.text(n);
        Ok(match n.kind_name() {
            "integer" | "float" => Pad::Clean(text.replace('_', "").parse::<f64>().ok()),
            "true" | "false" | "none" | "string" | "concatenated_string" | "ellipsis" => Pad::Clean(None),
            "identifier" => {
                let v = self.env.get(text).copied().unwrap_or(Pad::Clean(None));
                if self.padded_vars.iter().any(|p| p == text) && !self.env.contains_key(text) {
                    return Err(()); // used before its assignment: not followed
                }
                v
            }
            "parenthesized_expression" => self.expr(n.named_child(0).ok_or(())?)?,
            "unary_operator" => {
                let v = self.expr(field!(n, "argument").ok_or(())?)?;
                let op = field!(n, "operator").map(|o| self.model.text(o)).unwrap_or("");
                match (op, v) {
                    ("-", Pad::Clean(x)) => Pad::Clean(x.map(|x| -x)),
                    ("-", Pad::Lanes(x)) => Pad::Lanes(-x),
                    ("+", v) => v,
                    (_, Pad::Clean(_)) => Pad::Clean(None),
                    _ => Pad::Dirty,
                }
            }
            "binary_operator" => {
                let l = self.expr(field!(n, "left").ok_or(())?)?;
                let r = self.expr(field!(n, "right").ok_or(())?)?;
                let op = field!(n, "operator").map(|o| self.model.text(o)).unwrap_or("");
                binary(op, l, r)
            }
            "comparison_operator" | "boolean_operator" | "not_operator" => {
                let mut c = n.walk();
                let kids: Vec<Node> = n.named_children(&mut c).collect();
                let mut all_clean = true;
                for kid in kids {
                    all_clean &= matches!(self.expr(kid)?, Pad::Clean(_));
                }
                if all_clean {
                    Pad::Clean(None)
                } else {
                    Pad::Dirty
                }
            }
            "subscript" => {
                // `cols[:, None]`: a new axis keeps what the lanes hold; any other index is not followed.
                let v = self.expr(field!(n, "value").ok_or(())?)?;
                let mut c = n.walk();
                let only_axes = n
                    .children_by_field_name("subscript", &mut c)
                    .all(|i| i.kind_name() == "none" || (i.kind_name() == "slice" && i.named_child_count() == 0));
                match v {
                    Pad::Clean(_) => Pad::Clean(None),
                    v if only_axes => v,
                    _ => return Err(()),
                }
            }
            "call" => self.call(n)?,
            "attribute" => match self.expr(field!(n, "object").ok_or(())?)? {
                Pad::Clean(_) => Pad::Clean(None),
                _ => return Err(()), // `.shape`, `.dtype` of a padded value: not followed
            },
            _ => {
                // Anything else (tuples, lambdas, ...) must not touch a padded value.
                let mut ids = Vec::new();
                crate::model::collect_identifiers(n, self.model.src, &mut ids);
                if ids.iter().any(|i| !matches!(self.env.get(i.as_str()), None | Some(Pad::Clean(_)))) {
                    return Err(());
                }
                Pad::Clean(None)
            }
        })
    }

    fn call(&mut self, n: Node) -> R<Pad> {
        let function = field!(n, "function").ok_or(())?;
        let args_node = field!(n, "arguments").ok_or(())?;
        let mut c = args_node.walk();
        let args: Vec<Node> = args_node.named_children(&mut c).collect();
        let fn_text = self.model.text(function);
        if fn_text == "float" {
            if let Some(&a) = args.first() {
                let s: String = self.model.text(a).chars().filter(|ch| !matches!(ch, '"' | '\'')).collect();
                return Ok(match s.trim() {
                    "inf" | "+inf" => Pad::Clean(Some(f64::INFINITY)),
                    "-inf" => Pad::Clean(Some(f64::NEG_INFINITY)),
                    _ => Pad::Clean(None),
                });
            }
        }
        let id = n.id();
        if let Some(call) = self.calls.get(&id).copied() {
            if let Some(name) = call.tl_name.as_deref() {
                if name == "arange" && self.aranges.contains(&id) {
                    return Ok(Pad::Dirty);
                }
                if (name == "load" || name == "store") && self.masked.contains(&id) {
                    for &a in &args {
                        self.expr(value_of(a))?; // pointer, value, mask: any padded lanes are masked off
                    }
                    return Ok(self.loads.get(&id).copied().unwrap_or(Pad::Clean(None)));
                }
                let neutral = match name {
                    "max" | "argmax" => Some(f64::NEG_INFINITY),
                    "min" | "argmin" => Some(f64::INFINITY),
                    "sum" => Some(0.0),
                    _ => None,
                };
                if let Some(neutral) = neutral {
                    let input = call.arg(0, "input").ok_or(())?;
                    for &a in &args {
                        if value_of(a).id() != input.id() {
                            self.clean(value_of(a))?;
                        }
                    }
                    return match self.expr(input)? {
                        Pad::Clean(_) => Ok(Pad::Clean(None)),
                        Pad::Lanes(v) if v == neutral => Ok(Pad::Clean(None)),
                        _ => Err(()),
                    };
                }
                let unary: Option<fn(f64) -> f64> = match name {
                    "exp" => Some(f64::exp),
                    "exp2" => Some(f64::exp2),
                    "log" => Some(f64::ln),
                    "log2" => Some(f64::log2),
                    "sqrt" | "sqrt_rn" => Some(f64::sqrt),
                    "abs" => Some(f64::abs),
                    "sigmoid" => Some(|x: f64| 1.0 / (1.0 + (-x).exp())),
                    _ => None,
                };
                if let (Some(f), [a]) = (unary, args.as_slice()) {
                    return Ok(match self.expr(value_of(*a))? {
                        Pad::Clean(v) => Pad::Clean(v.map(f)),
                        Pad::Lanes(v) if !f(v).is_nan() => Pad::Lanes(f(v)),
                        _ => Pad::Dirty,
                    });
                }
                if matches!(name, "maximum" | "minimum") && args.len() == 2 {
                    let (a, b) = (self.expr(value_of(args[0]))?, self.expr(value_of(args[1]))?);
                    let pick = |x: f64, y: f64| if name == "maximum" { x.max(y) } else { x.min(y) };
                    return Ok(match (a, b) {
                        (Pad::Clean(_), Pad::Clean(_)) => Pad::Clean(None),
                        (Pad::Lanes(x), Pad::Lanes(y))
                        | (Pad::Lanes(x), Pad::Clean(Some(y)))
                        | (Pad::Clean(Some(y)), Pad::Lanes(x)) => Pad::Lanes(pick(x, y)),
                        _ => Pad::Dirty,
                    });
                }
            }
        }
        // `x.to(tl.float32)`: a cast keeps 0 and the infinities.
        if function.kind_name() == "attribute"
            && field!(function, "attribute").is_some_and(|a| self.model.text(a) == "to")
        {
            let object = self.expr(field!(function, "object").ok_or(())?)?;
            for &a in &args {
                self.clean(value_of(a))?;
            }
            return Ok(match object {
                Pad::Clean(_) => Pad::Clean(None),
                v => v,
            });
        }
        // Any other call: padded values must not reach it.
        if function.kind_name() == "attribute" {
            self.clean(field!(function, "object").ok_or(())?)?;
        }
        for &a in &args {
            self.clean(value_of(a))?;
        }
        Ok(Pad::Clean(None))
    }
}

/// The value of an argument: itself, or a keyword argument's value.
fn value_of(a: Node) -> Node {
    if a.kind_name() == "keyword_argument" {
        field!(a, "value").unwrap_or(a)
    } else {
        a
    }
}

fn binary(op: &str, l: Pad, r: Pad) -> Pad {
    let arith = |a: f64, b: f64| -> Option<f64> {
        let v = match op {
            "+" => a + b,
            "-" => a - b,
            "*" => a * b,
            "/" => a / b,
            _ => return None,
        };
        (!v.is_nan()).then_some(v)
    };
    match (l, r) {
        (Pad::Clean(a), Pad::Clean(b)) => Pad::Clean(a.zip(b).and_then(|(a, b)| arith(a, b))),
        (Pad::Dirty, _) | (_, Pad::Dirty) => Pad::Dirty,
        (Pad::Lanes(a), Pad::Lanes(b)) | (Pad::Lanes(a), Pad::Clean(Some(b))) => {
            arith(a, b).map(Pad::Lanes).unwrap_or(Pad::Dirty)
        }
        (Pad::Clean(Some(a)), Pad::Lanes(b)) => arith(a, b).map(Pad::Lanes).unwrap_or(Pad::Dirty),
        // A scalar not known here (assumed finite) with padded lanes holding `a`.
        (Pad::Lanes(a), Pad::Clean(None)) => match op {
            "+" | "-" if a.is_infinite() => Pad::Lanes(a),
            "*" | "/" if a == 0.0 => Pad::Lanes(0.0),
            _ => Pad::Dirty,
        },
        (Pad::Clean(None), Pad::Lanes(b)) => match op {
            "+" if b.is_infinite() => Pad::Lanes(b),
            "-" if b.is_infinite() => Pad::Lanes(-b),
            "*" if b == 0.0 => Pad::Lanes(0.0),
            "/" if b.is_infinite() => Pad::Lanes(0.0),
            _ => Pad::Dirty,
        },
    }
}

#[cfg(test)]
mod tests {
    use crate::checker::check_text;
    use crate::config::Settings;
    use crate::diagnostic::apply_edits;

    /// The KL004 fix of the one kernel in `body` (a kernel taking `n` at run time).
    fn fixed(body: &str) -> Option<String> {
        let text = format!(
            "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(o_ptr, x_ptr, n):\n{body}\n\ndef go(o, x):\n    k[(1,)](o, x, x.numel())\n"
        );
        let settings = Settings { select: vec!["KL004".into()], ..Settings::default() };
        let d = check_text(&text, &settings).diagnostics.into_iter().next().expect("KL004");
        let fix = d.fix.expect("a fix");
        fix.title.starts_with("Pad to").then(|| apply_edits(&text, &fix.edits).expect("edits apply"))
    }

    #[test]
    fn a_min_gets_plus_infinity() {
        let out =
            fixed("    c = tl.arange(0, n)\n    x = tl.load(x_ptr + c)\n    tl.store(o_ptr, tl.min(-x * 3.0, axis=0))")
                .expect("pad fix");
        // -x * 3 must hold +inf in the padded lanes: x holds -inf.
        assert!(out.contains("mask=c < n, other=-float(\"inf\")"), "{out}");
        assert!(out.contains("BLOCK_N=triton.next_power_of_2(x.numel())"), "{out}");
    }

    #[test]
    fn nothing_offered_where_padded_lanes_cannot_be_followed() {
        // Reassigned in a loop.
        let looped = "    c = tl.arange(0, n)\n    x = tl.load(x_ptr + c)\n    for i in range(3):\n        x = x * 2.0\n    tl.store(o_ptr, tl.sum(x, axis=0))";
        assert_eq!(fixed(looped), None);
        // The padded shape is read.
        let shaped = "    c = tl.arange(0, n)\n    x = tl.load(x_ptr + c)\n    tl.store(o_ptr + c, x * x.shape[0])";
        assert_eq!(fixed(shaped), None);
        // Into an unknown helper.
        let helper = "    c = tl.arange(0, n)\n    x = tl.load(x_ptr + c)\n    tl.store(o_ptr, helper(x))";
        assert_eq!(fixed(helper), None);
        // A max whose padded lanes would hold 1 whatever `other=` is.
        let maxed =
            "    c = tl.arange(0, n)\n    x = tl.load(x_ptr + c)\n    tl.store(o_ptr, tl.max(x * 0.0 + 1.0, axis=0))";
        assert_eq!(fixed(maxed), None);
    }

    #[test]
    fn elementwise_only_needs_no_particular_other() {
        let out =
            fixed("    c = tl.arange(0, n)\n    x = tl.load(x_ptr + c)\n    tl.store(o_ptr + c, tl.exp(x) + 1.0)")
                .expect("pad fix");
        assert!(out.contains("mask=c < n, other=0.0") && out.contains("tl.exp(x) + 1.0, mask=c < n)"), "{out}");
    }
}
