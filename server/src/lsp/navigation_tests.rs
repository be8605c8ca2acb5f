use super::*;

const SRC: &str = r#"import triton
import triton.language as tl

SCALE = 2


@triton.jit
def scale_helper(x, BLOCK: tl.constexpr):
    return x * SCALE


@triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["n"])
@triton.jit
def copy_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, scale_helper(x, BLOCK=BLOCK))


def run(x):
    copy_kernel[(1,)](x, x.numel(), BLOCK=128)


class Model:
    def forward(self, x):
        run(x)
        return x
"#;

fn at(src: &str, needle: &str, nth: usize) -> usize {
    src.match_indices(needle).nth(nth).map(|(i, _)| i).expect(needle)
}

fn texts<'s>(src: &'s str, ranges: &[TextRange]) -> Vec<(usize, &'s str)> {
    ranges.iter().map(|r| (r.start, &src[r.start..r.end])).collect()
}

#[test]
fn a_launch_goes_to_its_kernel_and_a_keyword_to_its_parameter() {
    let tree = model::parse_forest(SRC);
    let m = FileModel::build(SRC, &tree);
    let launch = identifier_at(&tree, at(SRC, "copy_kernel[", 0) + 3).unwrap();
    let t = resolve(&m, launch).unwrap();
    assert_eq!(definition(&m, &t).start, at(SRC, "copy_kernel(x_ptr", 0));
    let kw = identifier_at(&tree, at(SRC, "BLOCK=128", 0)).unwrap();
    let t = resolve(&m, kw).unwrap();
    assert_eq!(t, Target::Param { kernel: 1, name: "BLOCK".into() });
    assert_eq!(definition(&m, &t).start, at(SRC, "BLOCK: tl.constexpr):", 1));
    // inside the kernel, in the autotune config's key, at the launch, and the helper's own BLOCK is another
    let refs = references(&m, &t, true);
    let starts: Vec<usize> = refs.iter().map(|r| r.start).collect();
    assert_eq!(
        starts,
        vec![
            at(SRC, "BLOCK\": 64", 0),
            at(SRC, "BLOCK: tl.constexpr):", 1),
            at(SRC, "BLOCK)\n    x = ", 0),
            at(SRC, "BLOCK=BLOCK", 0) + 6,
            at(SRC, "BLOCK=128", 0),
        ]
    );
    let helper_kw = identifier_at(&tree, at(SRC, "BLOCK=BLOCK", 0)).unwrap();
    assert_eq!(resolve(&m, helper_kw), Some(Target::Param { kernel: 0, name: "BLOCK".into() }));
}

#[test]
fn module_constants_and_helpers_resolve_from_inside_kernels() {
    let tree = model::parse_forest(SRC);
    let m = FileModel::build(SRC, &tree);
    let use_ = identifier_at(&tree, at(SRC, "SCALE\n", 0)).unwrap();
    let t = resolve(&m, use_).unwrap();
    assert_eq!(definition(&m, &t).start, at(SRC, "SCALE = 2", 0));
    let refs = references(&m, &t, false);
    assert_eq!(texts(SRC, &refs), vec![(at(SRC, "SCALE\n", 0), "SCALE")]);
    let call = identifier_at(&tree, at(SRC, "scale_helper(x, BLOCK", 0)).unwrap();
    assert_eq!(resolve(&m, call), Some(Target::Kernel(0)));
    // a local variable is nothing to navigate to
    let local = identifier_at(&tree, at(SRC, "offs = ", 0)).unwrap();
    assert_eq!(resolve(&m, local), None);
}

#[test]
fn symbols_nest_parameters_and_methods() {
    let tree = model::parse_forest(SRC);
    let m = FileModel::build(SRC, &tree);
    let syms = document_symbols(&m);
    let names: Vec<(&str, SymbolKind)> = syms.iter().map(|s| (s.name.as_str(), s.kind)).collect();
    assert_eq!(
        names,
        vec![
            ("SCALE", SymbolKind::Constant),
            ("scale_helper", SymbolKind::Helper),
            ("copy_kernel", SymbolKind::Kernel),
            ("run", SymbolKind::Function),
            ("Model", SymbolKind::Class),
        ]
    );
    let kernel = &syms[2];
    assert_eq!(kernel.range.start, at(SRC, "@triton.autotune", 0), "the decorators are part of the symbol");
    let params: Vec<(&str, SymbolKind)> = kernel.children.iter().map(|s| (s.name.as_str(), s.kind)).collect();
    assert_eq!(
        params,
        vec![("x_ptr", SymbolKind::Parameter), ("n", SymbolKind::Parameter), ("BLOCK", SymbolKind::ConstexprParameter)]
    );
    assert_eq!(syms[4].children.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["forward"]);
}

#[test]
fn calls_go_from_kernels_to_launch_sites_and_back() {
    let tree = model::parse_forest(SRC);
    let m = FileModel::build(SRC, &tree);
    let incoming_kernel = incoming(&m, &Target::Kernel(1));
    assert_eq!(incoming_kernel.len(), 1);
    assert_eq!(incoming_kernel[0].end.name, "run");
    assert_eq!(texts(SRC, &incoming_kernel[0].at), vec![(at(SRC, "copy_kernel[", 0), "copy_kernel")]);
    let helper_callers = incoming(&m, &Target::Kernel(0));
    assert_eq!(helper_callers[0].end.name, "copy_kernel");
    let out = outgoing(&m, &Target::Kernel(1));
    assert_eq!(out.iter().map(|c| c.end.name.as_str()).collect::<Vec<_>>(), ["scale_helper"]);
    let run = item_target(&m, "run", at(SRC, "run(x):", 0)).unwrap();
    assert_eq!(outgoing(&m, &run).iter().map(|c| c.end.name.as_str()).collect::<Vec<_>>(), ["copy_kernel"]);
    let callers: Vec<String> = incoming(&m, &run).into_iter().map(|c| c.end.name).collect();
    assert_eq!(callers, ["forward"]);
}
