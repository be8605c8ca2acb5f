//! The checker's tests: each path (full, kernel edit, host edit) gives what
//! a full analysis of the same tree gives, on chosen edits and on random edit
//! sequences (the property tests), applied as a document applies them: to
//! the text and the old tree, reparsed once per analysis.

use std::sync::Arc;

use super::full::{full_on, PARALLEL_INDEX_BYTES};
use super::matching::has_import_keyword;
use super::{analyze, check, CheckResult, Path, Snapshot};
use crate::config::Settings;
use crate::model::parse_forest;
use crate::model::Forest;
use crate::model::NodeKind;
use crate::text::{changed_span, LineIndex};
use crate::xorshift::Rng;

#[test]
fn the_import_keyword_is_found_as_a_word() {
    assert!(has_import_keyword("import torch"));
    assert!(has_import_keyword("from x import (y)"));
    assert!(has_import_keyword("    import torch.item("));
    assert!(has_import_keyword("x = 1\nimport"));
    assert!(!has_import_keyword("# important: the mask"));
    assert!(!has_import_keyword("reimport_ = 1"));
    assert!(!has_import_keyword("imports = []"));
    // A character outside ASCII does not lengthen the word: the parser may read the keyword there.
    assert!(has_import_keyword("import\u{1D11E} triton"));
    assert!(has_import_keyword("x\u{e9} import triton"));
}

/// An import made garbage by a character outside ASCII beside the keyword
/// (the parser still reads an import statement, with an error) changes the
/// imports: the result is a full analysis's (found with seed 91065 of the
/// random-edit tests at four times the seeds).
#[test]
fn an_import_spoilt_beside_its_keyword_rereads_the_imports() {
    let text = "import torch\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, tl.tanh(1.0))\n\n\ndef launch(x):\n    k[(1,)](x)\n";
    for spoilt in ["import\u{1D11E} trtl.tanh(ort tri", "import\u{1D11E}triton.language as tl"] {
        let mut doc = Doc::new(text);
        assert!(doc.result.diagnostics.iter().any(|d| d.code == "KL005"), "{:?}", doc.result.diagnostics);
        edit_and_check(&mut doc, "import triton.language", "import triton.language as tl", spoilt);
    }
    // The random edits' text: a line break inside the one name that imported
    // Triton. (Its import line leaves a bracket open before a line that
    // cannot continue it, so it is masked now, `model::recovery`, and binds
    // nothing; the edit must still give a full analysis's result.)
    let mut doc = Doc::new("import𝄞 trtl.tanh(ort triton.lütl\n\n# ütl.tanh(m and #𝄞 so that UTF-16 and UTF-8 col:umns ditl.arange(0, \nef act(x_ptr, ytl. n,\"tl.constexpr\n):\n      fs = 𝄞n range(8):\n        am_id(0) * BLOCK @triton.jit\nrange(0, BLOCK)\n    x = tl.load(x_ptr + offs, maskfor t in range(8):\n# #𝄞 \nto:r(e(y_ptr + offs, tl.t#ntl.arange(0, H)\ntl.\n@tri:(x_ptr,) H):\n    offs = tl.arae(#, H)\n ton.j   # it\nl.store(x_ptr + offs, tl.sigtl.tanh(m#üoff(s))\n\n\nef launchx𝄞):\n    for t in range(1 tl.       act[(4,)](x, y, x.numel\n    (), BLOCK=128def )\n");
    edit_and_check(&mut doc, "import", "ort tri", "ort tri\n    ");
}

/// A candidate of about 64 KB: blocks of a kernel (with a KL108 finding
/// inside) and a helper that launches it in a time loop, and a `forward`
/// that calls every helper. Returns the text and the number of blocks.
fn many_blocks() -> (String, usize) {
    let mut text =
        String::from("import os\nimport torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n");
    let mut i = 0;
    while text.len() < 2 * PARALLEL_INDEX_BYTES {
        text.push_str(&format!(
            r#"

@triton.jit
def k{i}(x_ptr, h_ptr, out_ptr, n, H):
    offs = tl.arange(0, H)
    h = tl.load(h_ptr + offs)
    tl.store(out_ptr + offs, tl.tanh(h) + os.environ["A"])


def run{i}(x, h, steps):
    out = torch.empty_like(h)
    for t in range(steps):
        k{i}[(1,)](x[t], h, out, h.numel(), 64)
        h = out
        if h.sum().item() > 0:
            break
    return h
"#
        ));
        i += 1;
    }
    text.push_str("\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        x = x.half()\n");
    for j in 0..i {
        text.push_str(&format!("        x = run{j}(x, x, 8)\n"));
    }
    text.push_str("        return x\n");
    (text, i)
}

/// The two-thread full analysis (node index beside the model, host rules
/// beside the kernel rules) gives what one thread gives, on a candidate
/// large enough to take it, with findings of every reach.
#[test]
fn two_threads_give_what_one_gives() {
    let (text, _) = many_blocks();
    let text: Arc<str> = Arc::from(text.as_str());
    let tree = parse_forest(&text);
    let settings = Settings::default();
    let index = LineIndex::new(&text);
    let one = full_on(&text, &tree, &settings, false).result(&index);
    let two = full_on(&text, &tree, &settings, true).result(&index);
    for code in ["KL001", "KL004", "KL010", "KL106", "KL108"] {
        assert!(
            one.diagnostics.iter().any(|d| d.code == code),
            "no {code} in the {} diagnostics",
            one.diagnostics.len()
        );
    }
    assert_eq!(one, two);
    assert_eq!(two, check(&text, &tree, &settings));
}

/// An edit of host code (a helper in the middle, then `forward`) takes
/// the host path, reads the kernels the edited statement does not launch
/// as stubs, and gives what a full analysis gives, KL108 inside the
/// stubbed kernels included.
/// Re-parses `text` with `old` (after `anchor`) replaced by `new` and
/// analyses it from `snapshot`; checks the result against a fresh analysis.
fn edit_from(
    text: &mut Arc<str>,
    tree: &mut Forest,
    snapshot: &Snapshot,
    anchor: &str,
    old: &str,
    new: &str,
) -> (CheckResult, Snapshot) {
    let at = text.find(anchor).expect("anchor");
    let start = at + text[at..].find(old).expect("old");
    let edited = format!("{}{new}{}", &text[..start], &text[start + old.len()..]);
    let index = LineIndex::new(text);
    let new_index = LineIndex::new(&edited);
    let point = |index: &LineIndex, b: usize| {
        let row = index.line_of(b);
        tree_sitter::Point::new(row, b - index.line_start(row))
    };
    tree.edit(&tree_sitter::InputEdit {
        start_byte: start,
        old_end_byte: start + old.len(),
        new_end_byte: start + new.len(),
        start_position: point(&index, start),
        old_end_position: point(&index, start + old.len()),
        new_end_position: point(&new_index, start + new.len()),
    });
    let scanned = crate::model::recovery::scanned(text);
    *text = Arc::from(edited.as_str());
    let edits = [(start, start + old.len(), start + new.len())];
    tree.reparse(text, &scanned, &edits, &new_index);
    let settings = Settings::default();
    let (result, next) = analyze(text, tree, &settings, &new_index, Some(snapshot));
    assert_eq!(result, check(text, tree, &settings), "{new}");
    (result, next)
}

/// A kernel, `step` launching it, two other host functions, and a class
/// whose `forward` has `body`.
fn step_module(body: &str) -> String {
    let head = "import torch\nimport triton\nimport triton.language as tl\n\n\
                @triton.jit\ndef step_kernel(x_ptr, h_ptr, n, B: tl.constexpr):\n    \
                o = tl.arange(0, B)\n    tl.store(h_ptr + o, tl.load(x_ptr + o) + tl.load(h_ptr + o))\n\n\
                def step(x, h):\n    step_kernel[(1,)](x, h, h.numel(), B=64)\n    return h\n\n\
                def other(x):\n    return x + 1\n\n\
                def scale(x):\n    return x * 2\n\n\
                class Model(torch.nn.Module):\n    def forward(self, x, h):\n        ";
    format!("{head}{body}")
}

/// A host function read as a stub keeps its findings while the edit
/// reaches nothing it reads; when a rule needs more of it than a stub
/// keeps (a time loop in a class method relaunching it: its launch sites),
/// the analysis is made again with that function walked (the others stay
/// stubs), and gives what a fresh one gives.
#[test]
fn host_stubs_are_walked_when_a_rule_needs_their_body() {
    let text = step_module("for t in range(x.shape[0]):\n            h = step(x[t], h)\n        return h\n");
    let settings = Settings::default();
    let mut text: Arc<str> = Arc::from(text.as_str());
    let mut tree = parse_forest(&text);
    let (first, snapshot) = analyze(&text, &tree, &settings, &LineIndex::new(&text), None);
    assert!(first.diagnostics.iter().any(|d| d.code == "KL001"), "{:?}", first.diagnostics);
    // A fresh analysis keeps how each statement links to the others: the
    // first host edit already reads a function it cannot reach as a stub.
    let (_, snapshot) = edit_from(&mut text, &mut tree, &snapshot, "def scale", "x * 2", "x * 3");
    // `other` a stub; `forward`'s time loop (walked with its class) reaches
    // `step`'s launch: read with `step` a stub, then again with it walked.
    assert_eq!((snapshot.path(), snapshot.host_stubs(), snapshot.builds()), (Path::Host, 1, 2));
    // `other` changes: `scale` is a stub, and `step` is walked from the start.
    let (second, next) = edit_from(&mut text, &mut tree, &snapshot, "def other", "x + 1", "x + 2");
    assert!(second.diagnostics.iter().any(|d| d.code == "KL001"), "{:?}", second.diagnostics);
    assert_eq!(next.path(), Path::Host);
    assert_eq!(next.host_stubs(), 1, "`scale` a stub, `step` (whose launch sites a rule read) walked");
    assert_eq!(next.builds(), 1, "`step` walked from the start");
    let (_, next) = edit_from(&mut text, &mut tree, &next, "def other", "x + 2", "x + 4");
    assert_eq!((next.host_stubs(), next.builds()), (1, 1));
    let (_, next) = edit_from(&mut text, &mut tree, &next, "def other", "x + 4", "x + 2");
    // Without the time loop nothing reads a stub's body: `step` and `scale` are stubs.
    let (_, next) = edit_from(
        &mut text,
        &mut tree,
        &next,
        "for t in",
        "for t in range(x.shape[0]):\n            h = step(x[t], h)",
        "h = step(x[0], h)",
    );
    let (_, next) = edit_from(&mut text, &mut tree, &next, "def other", "x + 2", "x + 3");
    assert_eq!(next.path(), Path::Host);
    assert_eq!(next.host_stubs(), 2, "`step` and `scale` read as stubs");
}

/// A function walked because a rule read it is walked from the start of the
/// next host edits while the loop that asked for it may still be there
/// (`Snapshot::walk_again`); once an edit deletes a loop from the changed
/// statement, the next edit reads it as a stub again.
#[test]
fn a_deleted_loop_lets_its_walked_functions_be_stubs_again() {
    let text = step_module("h = step(x, h)\n        return h\n");
    let settings = Settings::default();
    let mut text: Arc<str> = Arc::from(text.as_str());
    let mut tree = parse_forest(&text);
    let (_, snapshot) = analyze(&text, &tree, &settings, &LineIndex::new(&text), None);
    let (_, next) = edit_from(&mut text, &mut tree, &snapshot, "def scale", "x * 2", "x * 3");
    let (_, next) = edit_from(&mut text, &mut tree, &next, "def other", "x + 1", "x + 2");
    assert_eq!((next.host_stubs(), next.builds()), (2, 1), "`step` and `scale` stubs");
    // A loop in `forward` that calls nothing: a rule reads `step` all the same.
    let loop_line = "while h.sum() > 0: h = h - 1\n        ";
    let (_, next) =
        edit_from(&mut text, &mut tree, &next, "def forward", "h = step(x, h)", &format!("{loop_line}h = step(x, h)"));
    let read = next.builds() == 2;
    let (_, next) = edit_from(&mut text, &mut tree, &next, "def other", "x + 2", "x + 3");
    assert_eq!((read, next.host_stubs(), next.builds()), (true, 1, 1), "`step` walked from the start");
    // The loop goes: the next edit reads `step` as a stub again.
    let (_, next) = edit_from(&mut text, &mut tree, &next, "def forward", loop_line, "");
    let (_, next) = edit_from(&mut text, &mut tree, &next, "def other", "x + 3", "x + 4");
    assert_eq!((next.path(), next.host_stubs(), next.builds()), (Path::Host, 2, 1), "`step` and `scale` stubs");
}

#[test]
fn host_edits_read_unaffected_kernels_as_stubs() {
    let (text, blocks) = many_blocks();
    let settings = Settings::default();
    let mut text: Arc<str> = Arc::from(text.as_str());
    let mut tree = parse_forest(&text);
    let (_, mut snapshot) = analyze(&text, &tree, &settings, &LineIndex::new(&text), None);
    let middle = format!("def run{}(", blocks / 2);
    // A fresh analysis keeps the links: the first host edit already reads
    // every launching helper but the edited one as a host stub.
    snapshot = edit_from(&mut text, &mut tree, &snapshot, "def run0(", "return h", "return h * 1").1;
    assert_eq!(snapshot.path(), Path::Host);
    assert!(snapshot.host_stubs() + 1 >= blocks, "{} host stubs for {blocks} helpers", snapshot.host_stubs());
    for (anchor, old, new) in [
        (middle.as_str(), "out = torch.empty_like(h)", "out = torch.empty_like(h) * 2"),
        (middle.as_str(), "out = torch.empty_like(h) * 2", "out = torch.zeros_like(h) * 2"),
        ("def forward", "x = x.half()", "x = x.float()"),
    ] {
        let (result, next) = edit_from(&mut text, &mut tree, &snapshot, anchor, old, new);
        assert_eq!(next.path(), Path::Host, "{new}");
        assert!(next.stubs() + 2 >= blocks, "{} stubs for {blocks} kernels", next.stubs());
        // Every launching helper but the one edited is a host stub: the
        // edit reaches none of them, and `forward` calls none in a loop.
        assert!(next.host_stubs() + 1 >= blocks, "{} host stubs for {blocks} helpers", next.host_stubs());
        assert!(result.diagnostics.iter().filter(|d| d.code == "KL108").count() >= blocks);
        snapshot = next;
    }
}

/// Blocks of a kernel and its launching helper, as `many_blocks`, where
/// every kernel reads the module constant `SCALE` (a Triton global) only if
/// `reads_scale`, and every helper launches with `B=BLOCK`.
fn blocks_with_constants(count: usize, reads_scale: impl Fn(usize) -> bool) -> String {
    let mut text =
        String::from("import torch\nimport triton\nimport triton.language as tl\n\nBLOCK = 64\nSCALE = 2.0\n");
    for i in 0..count {
        let value = if reads_scale(i) { "h * SCALE" } else { "h * 2.0" };
        text.push_str(&format!(
            "\n\n@triton.jit\ndef k{i}(h_ptr, w_ptr, out_ptr, n, B: tl.constexpr):\n    pid = tl.program_id(0)\n    \
             offs = pid * B + tl.arange(0, B)\n    h = tl.load(h_ptr + offs, mask=offs < n)\n    acc = h + 1.0\n    \
             for k in range(0, 4):\n        acc += tl.load(w_ptr + k * B + offs)\n    gate = tl.sigmoid(acc + h)\n    \
             tl.store(out_ptr + offs, gate * {value}, mask=offs < n)\n\n\n\
             def run{i}(h, w, steps):\n    out = torch.empty_like(h)\n    n = h.numel()\n    for t in range(steps):\n        \
             k{i}[(1,)](h, w, out, n, B=BLOCK)\n        h = out\n    return out\n"
        ));
    }
    text
}

/// Typing a statement into a kernel one character at a time: while a
/// bracket is open, the statement is read masked from the line where it
/// cannot go on (`model::recovery`), so the rest of the kernel and the next
/// function keep their shape. (Before, error recovery left them at module
/// level, as assignments, and each such keystroke went to the host path or
/// a fresh analysis.) Every keystroke gives what a full analysis gives, none
/// is analysed afresh, and most take the kernel path (the host path those
/// whose masked lines hide what a load or store reads).
#[test]
fn a_bracket_left_open_in_a_kernel_stays_on_the_kernel_path() {
    let blocks = 24;
    let mut doc = Doc::new(&blocks_with_constants(blocks, |_| false));
    let at = doc.text.find("def k12(").expect("k12");
    let at = at + doc.text[at..].find("tl.program_id(0)\n").expect("a line") + "tl.program_id(0)\n".len();
    doc.edit(at, at, "    \n");
    doc.analyze();
    let typed = "z = tl.sigmoid(acc * 0.5) + tl.exp(h - 1.0)";
    let (mut module_level, mut kernels, mut fresh) = (0, 0, 0);
    for (k, ch) in typed.char_indices() {
        let pos = at + 4 + k;
        doc.edit(pos, pos, &ch.to_string());
        let snapshot = doc.analyze();
        let (path, stubs) = (snapshot.path(), snapshot.stubs());
        let full = check(&doc.text, &doc.tree, &Settings::default());
        assert_eq!(doc.result, full, "after {:?}", &typed[..=k]);
        // An assignment at module level other than the two constants.
        let tree_says = doc.tree.named_top_level().into_iter().any(|n| {
            n.kind_name() == "expression_statement"
                && n.named_child(0).is_some_and(|a| a.kind_name() == "assignment")
                && !["BLOCK =", "SCALE ="].iter().any(|c| doc.text[n.byte_range()].starts_with(c))
        });
        module_level += usize::from(tree_says);
        kernels += usize::from(path == Path::Kernels);
        fresh += usize::from(path == Path::Fresh);
        if path == Path::Host {
            assert!(stubs + 4 >= blocks, "{stubs} stubs for {blocks} kernels after {:?}", &typed[..=k]);
        }
    }
    assert_eq!(module_level, 0, "keystrokes left assignments at module level");
    assert_eq!(fresh, 0, "keystrokes analysed afresh");
    assert!(kernels * 2 > typed.len(), "{kernels} of {} keystrokes took the kernel path", typed.len());
}

/// A module-level constant changed, or assigned by a changed statement:
/// the kernels that read it (a Triton global) and the helpers that launch
/// with it are read again, the rest stay stubs, and the result is a full
/// analysis's.
#[test]
fn a_changed_module_constant_rereads_what_reads_it() {
    let blocks = 24;
    let text = blocks_with_constants(blocks, |i| i % 6 == 0);
    let mut doc = Doc::new(&text);
    let settings = Settings::default();
    for (old, new) in
        [("SCALE = 2.0", "SCALE = 3.0"), ("BLOCK = 64", "BLOCK = 48"), ("SCALE = 3.0", "SCALE = 2.0\nacc = 1")]
    {
        let at = doc.text.find(old).expect("the constant");
        doc.edit(at, at + old.len(), new);
        let snapshot = doc.analyze();
        assert_eq!(snapshot.path(), Path::Host, "{new}");
        let stubs = snapshot.stubs();
        assert_eq!(doc.result, check(&doc.text, &doc.tree, &settings), "{new}");
        if old.starts_with("SCALE") {
            // The four kernels that read `SCALE` are walked; the others stay stubs.
            assert_eq!(stubs, blocks - blocks.div_ceil(6), "{new}");
        } else {
            // Every helper launches with `BLOCK`: every kernel is walked.
            assert_eq!(stubs, 0, "{new}");
        }
    }
}

/// Typing an import at the top of a large candidate: every keystroke takes
/// the host path with the kernels as stubs (they do not read the names it
/// binds), where each was a fresh analysis before (43 ms at 5,000 lines);
/// removing an import the kernels read (`os`) reads them all again.
#[test]
fn typing_an_import_rereads_only_what_reads_its_names() {
    let (text, blocks) = many_blocks();
    let mut doc = Doc::new(&text);
    let settings = Settings::default();
    let at = doc.text.find("import torch\n").expect("an import");
    doc.edit(at, at, "\n");
    doc.analyze();
    let mut host = 0;
    for (k, ch) in "import math".char_indices() {
        doc.edit(at + k, at + k, &ch.to_string());
        let snapshot = doc.analyze();
        let (path, stubs) = (snapshot.path(), snapshot.stubs());
        assert_eq!(doc.result, check(&doc.text, &doc.tree, &settings), "after {k} characters");
        assert_ne!(path, Path::Fresh, "after {k} characters");
        if path == Path::Host {
            host += 1;
            assert!(stubs + 1 >= blocks, "{stubs} stubs for {blocks} kernels after {k} characters");
        }
    }
    assert!(host >= 5, "{host} keystrokes took the host path (`import` and after)");
    let os = doc.text.find("import os\n").expect("import os");
    doc.edit(os, os + "import os\n".len(), "");
    let snapshot = doc.analyze();
    assert_eq!((snapshot.path(), snapshot.stubs()), (Path::Host, 0), "every kernel reads `os`");
    assert_eq!(doc.result, check(&doc.text, &doc.tree, &settings));
}

/// A launch whose grid is a function another statement defines (here at
/// module level): a kernel edit reads that statement too, so the KL002 fix
/// that widens each launch's grid is the one a full analysis gives (it was
/// lost on the kernel path, found by the property test with more seeds).
#[test]
fn a_kernel_edit_reads_the_grid_function_its_launch_names() {
    let fixture = include_str!("../../../tests/fixtures/rules/KL002.py");
    let nested = "def launch_with_def(a, b, c, M, N, K):\n    def grid(meta):\n        return (triton.cdiv(M, meta[\"BLOCK_M\"]),)\n\n    for_tiles[grid]";
    assert!(fixture.contains(nested), "the fixture's nested grid function");
    let text = fixture.replace(
        nested,
        "def tiles_grid(meta):\n    return (triton.cdiv(meta[\"M\"], meta[\"BLOCK_M\"]),)\n\n\ndef launch_with_def(a, b, c, M, N, K):\n    for_tiles[tiles_grid]",
    );
    let mut doc = Doc::new(&text);
    let fixes = |r: &CheckResult| r.diagnostics.iter().filter(|d| d.code == "KL002" && d.fix.is_some()).count();
    assert!(fixes(&doc.result) > 0, "a KL002 fix to keep: {:?}", doc.result.diagnostics);
    let path = edit_and_check(&mut doc, "def for_tiles", "offs_m = pid_m * BLOCK_M", "offs_m = BLOCK_M * pid_m");
    assert_eq!(path, Path::Kernels);
}

/// KL006 falls back on the element widths the whole file's host code names
/// when neither the kernel nor its launchers name one: a host edit that
/// names another width elsewhere changes a kernel stub's finding, so the
/// kernels are read again (found by the property test with more seeds).
#[test]
fn a_host_edit_naming_another_width_rereads_the_kernels() {
    let kernel = include_str!("../../../tests/fixtures/rules/KL006.py");
    let at = kernel.find("@triton.jit\ndef matmul_plain").expect("matmul_plain");
    let end = kernel[at..].find("\n\n\n").map_or(kernel.len(), |e| at + e);
    // The kernel, a launch that names no dtype, and host code naming fp32 only.
    let text = format!(
        "import torch\nimport triton\nimport triton.language as tl\n\n\n{}\n\n\n\
         def run(a, b, c, M, N, K):\n    grid = (triton.cdiv(M, 256), triton.cdiv(N, 256))\n    \
         matmul_plain[grid](a, b, c, K, BM=256, BN=256, BK=128, num_stages=4)\n\n\n\
         def inputs():\n    return torch.randn(64, 64)\n",
        &kernel[at..end]
    );
    let mut doc = Doc::new(&text);
    let before: Vec<_> = doc.result.diagnostics.iter().filter(|d| d.code == "KL006").map(|d| d.severity).collect();
    assert!(!before.is_empty(), "a KL006 finding: {:?}", doc.result.diagnostics);
    // Another host function names fp16: the width is no longer shown.
    let path =
        edit_and_check(&mut doc, "def inputs", "return torch.randn(64, 64)", "return torch.randn(64, 64).half()");
    assert_eq!(path, Path::Host);
    let after: Vec<_> = doc.result.diagnostics.iter().filter(|d| d.code == "KL006").map(|d| d.severity).collect();
    assert_ne!(before, after, "the finding follows the widths the host code names");
}

/// A document as the checker sees it: the text, the tree kept in step with
/// every edit, and the last analysis with its snapshot.
struct Doc {
    text: Arc<str>,
    tree: Forest,
    /// The gaps `tree` was parsed around, and the edits since (`Forest::reparse`).
    scanned: crate::model::recovery::Scanned,
    edits: Vec<(usize, usize, usize)>,
    snapshot: Option<Snapshot>,
    result: CheckResult,
}

impl Doc {
    fn new(text: &str) -> Doc {
        let text: Arc<str> = Arc::from(text);
        let tree = parse_forest(&text);
        let (result, snapshot) = analyze(&text, &tree, &Settings::default(), &LineIndex::new(&text), None);
        let scanned = crate::model::recovery::scanned(&text);
        Doc { text, tree, scanned, edits: Vec::new(), snapshot: Some(snapshot), result }
    }

    /// Replaces the bytes `a..b` with `insert` in the text and the tree (not reparsed yet).
    fn edit(&mut self, a: usize, b: usize, insert: &str) {
        let index = LineIndex::new(&self.text);
        let mut edited = self.text.to_string();
        edited.replace_range(a..b, insert);
        let new_index = LineIndex::new(&edited);
        let point = |index: &LineIndex, at: usize| {
            let row = index.line_of(at);
            tree_sitter::Point::new(row, at - index.line_start(row))
        };
        let edit = tree_sitter::InputEdit {
            start_byte: a,
            old_end_byte: b,
            new_end_byte: a + insert.len(),
            start_position: point(&index, a),
            old_end_position: point(&index, b),
            new_end_position: point(&new_index, a + insert.len()),
        };
        self.tree.edit(&edit);
        self.edits.push((a, b, a + insert.len()));
        self.text = Arc::from(edited.as_str());
    }

    /// How many diagnostics of `code` the last analysis gave.
    fn count(&self, code: &str) -> usize {
        self.result.diagnostics.iter().filter(|d| d.code == code).count()
    }

    /// [`Doc::analyze`], and the result is a full analysis's of the same tree; the path it took.
    fn analyze_as_full(&mut self) -> Path {
        let path = self.analyze().path();
        assert_eq!(self.result, check(&self.text, &self.tree, &Settings::default()));
        path
    }

    /// Reparses from the edited tree and analyses from the last snapshot.
    fn analyze(&mut self) -> &Snapshot {
        let index = LineIndex::new(&self.text);
        let edits = std::mem::take(&mut self.edits);
        (self.scanned, _) = self.tree.reparse(&self.text, &self.scanned, &edits, &index);
        let (result, snapshot) = analyze(&self.text, &self.tree, &Settings::default(), &index, self.snapshot.as_ref());
        self.result = result;
        self.snapshot.insert(snapshot)
    }

    fn line_index(&self) -> LineIndex {
        LineIndex::new(&self.text)
    }
}

fn char_boundary(text: &str, mut offset: usize) -> usize {
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

pub(crate) const FIXTURE: &str = r#"import triton
import triton.language as tl

# ümlauts and 𝄞 so that UTF-16 and UTF-8 columns differ
@triton.jit
def act(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)  # é
    tl.store(y_ptr + offs, tl.tanh(x), mask=offs < n)


@triton.jit
def bad(x_ptr, H):
    offs = tl.arange(0, H)
    tl.store(x_ptr + offs, tl.sigmoid(offs))


def launch(x, y):
    for t in range(16):
        act[(4,)](x, y, x.numel(), BLOCK=128)
"#;

const SNIPPETS: &[&str] = &[
    "x",
    " ",
    "\n",
    "tl.tanh(",
    ")",
    "(",
    "é",
    "𝄞",
    "BLOCK",
    "tl.arange(0, H)",
    ":",
    "    ",
    "def ",
    "\n    ",
    "tl.",
    "@triton.jit\n",
    "#",
    "ü",
    "\"",
    "for t in range(8):\n        ",
];

/// Several definitions that read each other: a barrier helper called from a
/// kernel, kernels launched from host functions with module-level
/// constants, autotune configs in a module-level list, suppressions, a
/// class, and host syncs in time loops.
pub(crate) const LINKED: &str = r#"import torch
import triton
import triton.language as tl

BLOCK = 100
CONFIGS = [triton.Config({"BM": 256, "BN": 256, "BK": 64}, num_stages=4)]


@triton.jit
def grid_barrier(bar_ptr, target):
    tl.atomic_add(bar_ptr, 1)
    while tl.atomic_add(bar_ptr, 0) < target:
        pass


@triton.jit
def step_kernel(h_ptr, w_ptr, bar_ptr, n, seq_len, H: tl.constexpr, B: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * B + tl.arange(0, B)
    cols = tl.arange(0, H)
    for t in range(seq_len):
        h = tl.load(h_ptr + offs, mask=offs < n)
        acc = tl.sum(tl.load(w_ptr + cols), axis=0) * h
        grid_barrier(bar_ptr, t + 1)
        tl.store(h_ptr + offs, tl.tanh(acc), mask=offs < n)  # kernel-lsp: ignore[KL005]


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, n, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], tl.dot(a, b))


def run_step(h, w, bar, steps):
    n = h.numel()
    for t in range(steps):
        step_kernel[(4,)](h, w, bar, n, 1, H=64, B=BLOCK)
        if h.sum().item() > 0:
            break
    return h


class Persistent:
    @triton.jit
    def fused(h_ptr, bar_ptr, n):
        for t in range(n):
            tl.store(h_ptr + t, tl.load(h_ptr + t))
            grid_barrier(bar_ptr, t)

    def run(self, h, bar):
        for t in range(h.size(0)):
            step_kernel[(4,)](h, h, bar, 8, 1, H=64, B=64)


class ModelNew(torch.nn.Module):
    def forward(self, x, w, bar):
        for t in range(x.size(0)):
            h = run_step(x[t], w, bar, 8)
        mm_kernel[(1,)](x, w, h, x.numel())
        return h
"#;

const LINKED_SNIPPETS: &[&str] = &[
    "h_ptr",
    "w_ptr",
    "tl.store(w_ptr + offs, h)\n        ",
    "_kernel",
    "step",
    "grid_barrier(bar_ptr, 1)\n    ",
    "# kernel-lsp: ignore\n",
    "  # kernel-lsp: ignore[KL004]",
    "@triton.jit\ndef ",
    "BLOCK = 96\n",
    "\n\n",
    "    tl.store(h_ptr, tl.relu(h))\n",
    "x.item()",
    "tl.arange(0, n)",
    "mm_kernel[(2,)](a, b, c, 8, BM=48)\n",
    "import triton.language as tk\n",
    "while k < n:\n        ",
    "BLOCK",
    "def ",
    "(",
    ":",
    "\n    ",
    "",
];

/// Random edit batches, each applied to the text and the tree (one reparse
/// per analysis, from the edited old tree, as a document does), analysed
/// from the previous snapshot, give after every batch what a full analysis of
/// the same tree gives, and of a fresh parse where the trees agree. Returns
/// how many analyses took the kernel path, how many the host path, how many
/// of those read some statement as a stub, and how many read a host function as a stub.
fn random_edits(fixture: &str, snippets: &[&str], seeds: u64, versions: i32) -> (usize, usize, usize, usize) {
    let (mut incremental, mut host, mut stubbed, mut host_stubbed) = (0, 0, 0, 0);
    let mut syntax_errors = 0;
    for seed in 1..=seeds {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut doc = Doc::new(fixture);
        for version in 1..=versions {
            let before = doc.text.to_string();
            let batch = 1 + rng.below(3);
            let mut expected = before.clone();
            let mut edits = Vec::new();
            for _ in 0..batch {
                let a = char_boundary(&expected, rng.below(expected.len() + 1));
                let b = if rng.below(3) == 0 {
                    a
                } else {
                    char_boundary(&expected, (a + rng.below(12)).min(expected.len()))
                };
                let insert = if rng.below(4) == 0 { "" } else { snippets[rng.below(snippets.len())] };
                edits.push((a, b, insert.to_string()));
                expected.replace_range(a..b, insert);
            }
            // Sometimes the batch arrives as one change of the whole text,
            // which a document diffs into one edit.
            if rng.below(5) == 0 {
                let (start, old_end, new_end) = changed_span(&before, &expected);
                edits = vec![(start, old_end, expected[start..new_end].to_string())];
            }
            for (a, b, insert) in &edits {
                doc.edit(*a, *b, insert);
            }
            assert_eq!(*doc.text, expected, "seed {seed} version {version}");
            // Sometimes two edits land before an analysis, as when typing fast.
            if rng.below(4) == 0 && version < versions {
                continue;
            }
            let snapshot = doc.analyze();
            incremental += usize::from(snapshot.path() == Path::Kernels);
            host += usize::from(snapshot.path() == Path::Host);
            stubbed += usize::from(snapshot.stubs() > 0);
            host_stubbed += usize::from(snapshot.host_stubs() > 0);
            syntax_errors += usize::from(doc.result.diagnostics.iter().any(|d| d.code == "KL900"));
            // Exactly what a full analysis of the same tree gives. (After
            // some edits with syntax errors, tree-sitter's incremental
            // reparse recovers differently from a fresh parse of the same
            // text; the trees meet again once the errors are gone.)
            let settings = Settings::default();
            let full = check(&expected, &doc.tree, &settings);
            assert_eq!(doc.result, full, "seed {seed} version {version}\n{expected}");
            let fresh_tree = parse_forest(&expected);
            if doc.tree.to_sexp() == fresh_tree.to_sexp() {
                assert_eq!(doc.result, check(&expected, &fresh_tree, &settings), "seed {seed}");
            }
        }
        // With a syntax error left at the end, tree-sitter's incremental
        // reparse may still recover differently from a fresh parse: edit
        // back to the fixture (one edit, as a document diffs a whole-text
        // change), so that the trees must meet.
        let mut expected = doc.text.to_string();
        if parse_forest(&expected).has_error() {
            let (start, old_end, new_end) = changed_span(&expected, fixture);
            doc.edit(start, old_end, &fixture[start..new_end]);
            expected = fixture.to_string();
            doc.analyze();
        }
        let fresh_tree = parse_forest(&expected);
        assert_eq!(doc.tree.to_sexp(), fresh_tree.to_sexp(), "seed {seed}");
        assert_eq!(doc.result, check(&expected, &fresh_tree, &Settings::default()), "seed {seed}");
    }
    // The edits break the syntax often: KL900 must have been compared too.
    assert!(syntax_errors > 0, "no analysis reported a syntax error");
    (incremental, host, stubbed, host_stubbed)
}

#[test]
fn random_edits_match_a_fresh_analysis() {
    let (incremental, host, _, _) = random_edits(FIXTURE, SNIPPETS, 40, 30);
    assert!(incremental > 0, "no analysis took the kernel path");
    assert!(host > 0, "no analysis took the host path");
}

/// Edits that rename kernels, move definitions, change helpers, launches,
/// module constants, imports and suppressions in a file whose definitions read each other.
#[test]
fn random_edits_across_linked_definitions_match_a_fresh_analysis() {
    let (incremental, host, stubbed, host_stubbed) = random_edits(LINKED, LINKED_SNIPPETS, 60, 30);
    eprintln!("linked: {incremental} kernel-path, {host} host-path analyses, {stubbed} with stubs, {host_stubbed} with host stubs");
    assert!(incremental > 0, "no analysis took the kernel path");
    assert!(host > 0, "no analysis took the host path");
    assert!(stubbed > 0, "no host-path analysis read a kernel as a stub");
    assert!(host_stubbed > 0, "no host-path analysis read a host function as a stub");
}

/// Replaces the first `old` after `anchor` with `new` and analyses the
/// edit; returns how the analysis was made, after checking it against a fresh analysis.
fn edit_and_check(doc: &mut Doc, anchor: &str, old: &str, new: &str) -> Path {
    let from = doc.text.find(anchor).expect("anchor");
    let at = from + doc.text[from..].find(old).expect("old");
    doc.edit(at, at + old.len(), new);
    let path = doc.analyze().path();
    let fresh = check(&doc.text, &parse_forest(&doc.text), &Settings::default());
    assert_eq!(doc.result, fresh, "after replacing {old:?} with {new:?} at {anchor:?}");
    path
}

/// The cases the incremental path exists for take it, and stay exact:
/// typing in a kernel (through a syntax error and out of it), then in
/// another kernel while the first still has an error, and editing a helper
/// kernel whose callers (a kernel, and a class whose method launches
/// kernels in a time loop) must be checked again.
#[test]
fn typing_in_kernels_is_incremental_and_exact() {
    let mut doc = Doc::new(LINKED);
    let anchor = "def mm_kernel";
    assert_eq!(Path::Kernels, edit_and_check(&mut doc, anchor, "tl.dot(a, b)", "tl.dot(a, b) +"));
    assert!(doc.result.diagnostics.len() > 3);
    assert_eq!(Path::Kernels, edit_and_check(&mut doc, anchor, "tl.dot(a, b) +", "tl.dot(a, b) + 1"));
    assert_eq!(Path::Kernels, edit_and_check(&mut doc, anchor, "tl.dot(a, b) + 1", "tl.dot(a, b) +"));
    assert_eq!(Path::Kernels, edit_and_check(&mut doc, "def step_kernel", "tl.tanh(acc)", "tl.tanh(acc * 2)"));
    assert_eq!(Path::Kernels, edit_and_check(&mut doc, "def grid_barrier", "< target", "< target + 1"));
    assert_eq!(
        Path::Kernels,
        edit_and_check(&mut doc, "def grid_barrier", "tl.atomic_add(bar_ptr, 1)", "tl.atomic_xchg(bar_ptr, 1)")
    );
    // Host code takes the host path; kernel names and imports are analysed afresh; all exactly.
    assert_eq!(Path::Host, edit_and_check(&mut doc, "def run_step", "range(steps)", "range(h.size(0))"));
    assert_eq!(Path::Host, edit_and_check(&mut doc, "def mm_kernel", "mm_kernel", "mm2_kernel"));
    assert_eq!(Path::Fresh, edit_and_check(&mut doc, "import triton.language", "as tl", "as tk"));
}

/// A helper whose arange bound is a parameter, called from a kernel and
/// through another helper: KL004 on the helper depends on what the callers pass.
const HELPERS: &str = r#"import triton
import triton.language as tl


@triton.jit
def _tile(ptr, LEN):
    offs = tl.arange(0, LEN)
    return tl.load(ptr + offs)


@triton.jit
def _through(ptr, LEN):
    return _tile(ptr, LEN) * 2.0


@triton.jit
def caller(x_ptr, y_ptr, n, B: tl.constexpr):
    tl.store(y_ptr + tl.arange(0, B), _tile(x_ptr, B))


@triton.jit
def other(x_ptr, y_ptr, n, B: tl.constexpr):
    tl.store(y_ptr + tl.arange(0, B), _through(x_ptr, B))


def run(x, y):
    caller[(1,)](x, y, x.numel(), B=64)
    other[(1,)](x, y, x.numel(), B=64)
"#;

const HELPER_SNIPPETS: &[&str] = &["n", "B", "64", "_tile(x_ptr, n)", "_through(ptr, 8)", "\n    ", "(", ""];

/// Editing a caller re-checks the helpers it calls (directly and through
/// another helper): KL004 on `_tile` appears and goes as the caller passes
/// a runtime value or a constexpr, incrementally and exactly.
#[test]
fn editing_a_caller_rechecks_its_helpers() {
    let kl004_count = |doc: &Doc| doc.result.diagnostics.iter().filter(|d| d.code == "KL004").count();
    let mut doc = Doc::new(HELPERS);
    assert_eq!(kl004_count(&doc), 0);
    assert_eq!(Path::Kernels, edit_and_check(&mut doc, "def caller", "_tile(x_ptr, B)", "_tile(x_ptr, n)"));
    assert_eq!(kl004_count(&doc), 1, "{:?}", doc.result.diagnostics);
    assert_eq!(Path::Kernels, edit_and_check(&mut doc, "def caller", "_tile(x_ptr, n)", "_tile(x_ptr, B)"));
    assert_eq!(kl004_count(&doc), 0);
    // Through `_through`: `other` is two calls away from `_tile`'s arange.
    assert_eq!(Path::Kernels, edit_and_check(&mut doc, "def other", "_through(x_ptr, B)", "_through(x_ptr, n)"));
    assert_eq!(kl004_count(&doc), 1, "{:?}", doc.result.diagnostics);
    assert_eq!(Path::Kernels, edit_and_check(&mut doc, "def other", "_through(x_ptr, n)", "_through(x_ptr, B)"));
    assert_eq!(kl004_count(&doc), 0);
}

#[test]
fn random_edits_of_helpers_and_callers_match_a_fresh_analysis() {
    let (incremental, host, _, _) = random_edits(HELPERS, HELPER_SNIPPETS, 40, 30);
    assert!(incremental > 0, "no analysis took the kernel path");
    assert!(host > 0, "no analysis took the host path");
}

/// A KernelBench candidate: `ModelNew`, launching helpers, and the host
/// code the hygiene rules (KL101-KL109) read, so that random edits of host
/// code go through the analysis a candidate gets.
const CANDIDATE: &str = r#"import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x * tl.sigmoid(1.702 * x), mask=offs < n)


@triton.jit
def unused_kernel(x_ptr):
    tl.store(x_ptr, 1.0)


def run_gelu(x):
    y = torch.empty_like(x)
    n = x.numel()
    try:
        gelu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    except Exception:
        y = torch.nn.functional.gelu(x)
    return y


def run_steps(x, steps):
    for t in range(steps):
        x = run_gelu(x)
        if x.sum().item() > 0:
            break
    return x


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = None

    def forward(self, x):
        x = x.half()
        self.cache = run_steps(x, 4)
        return self.cache
"#;

const CANDIDATE_SNIPPETS: &[&str] = &[
    "torch.cuda.synchronize()\n    ",
    "import os\n",
    "from .kernels import step\n",
    "time.perf_counter = lambda: 0.0\n",
    "return torch.nn.functional.gelu(x)\n        ",
    "s = torch.cuda.Stream()\n    ",
    "unused_kernel[(1,)](x)\n    ",
    "for i in range(4):\n        ",
    "x = x.float()\n        ",
    "try:\n        ",
    "except Exception:\n        pass\n",
    "run_gelu(x)",
    "eval(\"1\")\n    ",
    "os.environ[\"A\"] = \"1\"\n    ",
    "time.perf_counter = None\n    ",
    "gelu_kernel(x_ptr, y_ptr, n, BLOCK)\n    ",
    "x = tl.load(x_ptr + offs)\n    ",
    "self.cache",
    ".item()",
    "\n    ",
    "(",
    ":",
    "",
];

/// Edits of a candidate (helpers, `forward`, imports, `try` statements,
/// patches, and inside kernels what the hygiene rules also read there:
/// `eval`, `os.environ`, timer patches, kernels calling kernels) match a
/// fresh analysis.
#[test]
fn random_edits_of_a_candidates_host_code_match_a_fresh_analysis() {
    let (incremental, host, stubbed, host_stubbed) = random_edits(CANDIDATE, CANDIDATE_SNIPPETS, 60, 30);
    eprintln!("candidate: {incremental} kernel-path, {host} host-path analyses, {stubbed} with stubs, {host_stubbed} with host stubs");
    assert!(host > 0, "no analysis took the host path");
    assert!(stubbed > 0, "no host-path analysis read a kernel as a stub");
    assert!(host_stubbed > 0, "no host-path analysis read a host function as a stub");
    // Edits inside kernels still take the incremental path in a candidate.
    assert!(incremental > 0, "no analysis took the incremental path");
}

/// In a candidate, typing in a kernel stays on the kernel path, and what
/// the hygiene rules read or report inside kernels is analysed again: an
/// `eval` or a timer patch typed into a kernel, an import edited, a kernel
/// that carries KL103 (nothing `forward` reaches launches). Those take
/// the host path (an import too).
#[test]
fn hygiene_inside_a_candidates_kernels_is_analysed_afresh() {
    let with_imports = CANDIDATE.replacen("import torch\n", "import time\nimport torch\n", 1);
    let mut doc = Doc::new(&with_imports);
    let count = |doc: &Doc, code: &str| doc.result.diagnostics.iter().filter(|d| d.code == code).count();
    let kernel = "def gelu_kernel";
    assert_eq!(Path::Kernels, edit_and_check(&mut doc, kernel, "1.702 * x", "1.7 * x"));
    assert_eq!(Path::Host, edit_and_check(&mut doc, kernel, "    x = tl.load", "    eval(\"1\")\n    x = tl.load"));
    assert_eq!(count(&doc, "KL108"), 1, "{:?}", doc.result.diagnostics);
    assert_eq!(Path::Host, edit_and_check(&mut doc, kernel, "    eval(\"1\")\n", ""));
    assert_eq!(count(&doc, "KL108"), 0);
    assert_eq!(
        Path::Host,
        edit_and_check(&mut doc, kernel, "    x = tl.load", "    time.perf_counter = None\n    x = tl.load")
    );
    assert_eq!(count(&doc, "KL107"), 1, "{:?}", doc.result.diagnostics);
    assert_eq!(Path::Host, edit_and_check(&mut doc, kernel, "    time.perf_counter = None\n", ""));
    assert_eq!(count(&doc, "KL107"), 0);
    // An import edited: the host path, the statements that read the names it binds read again.
    assert_eq!(Path::Host, edit_and_check(&mut doc, "import time", "import time", "import tim"));
    assert_eq!(Path::Kernels, edit_and_check(&mut doc, kernel, "1.7 * x", "1.702 * x"));
    // `forward` stops launching: KL103 on both kernels' names, which typing
    // in a kernel must not drop.
    assert_eq!(Path::Host, edit_and_check(&mut doc, "def forward", "run_steps(x, 4)", "x * 2"));
    assert_eq!(count(&doc, "KL103"), 2, "{:?}", doc.result.diagnostics);
    assert_eq!(Path::Host, edit_and_check(&mut doc, kernel, "1.702 * x", "1.7 * x"));
    assert_eq!(count(&doc, "KL103"), 2, "{:?}", doc.result.diagnostics);
}

/// On the host path KL107 and KL108 are asked of the changed statements
/// only: a helper read as it was keeps its findings, moved with it (an
/// edit above it adds a line), and a changed helper is asked again.
#[test]
fn host_edits_keep_the_hygiene_findings_of_unchanged_statements() {
    let text = CANDIDATE.replacen("import torch\n", "import time\nimport torch\n", 1).replacen(
        "    for t in range(steps):\n",
        "    eval(\"1\")\n    time.perf_counter = None\n    for t in range(steps):\n",
        1,
    );
    let mut doc = Doc::new(&text);
    let count = |doc: &Doc, code: &str| doc.result.diagnostics.iter().filter(|d| d.code == code).count();
    let line_of = |doc: &Doc, code: &str| {
        doc.result.diagnostics.iter().find(|d| d.code == code).map(|d| doc.line_index().line_of(d.range.start))
    };
    assert_eq!((count(&doc, "KL107"), count(&doc, "KL108")), (1, 1), "{:?}", doc.result.diagnostics);
    let (kl107_line, kl108_line) = (line_of(&doc, "KL107"), line_of(&doc, "KL108"));
    let helper = "def run_gelu";
    assert_eq!(Path::Host, edit_and_check(&mut doc, helper, "    n = x.numel()\n", "    n = x.numel()\n    m = n\n"));
    assert_eq!((count(&doc, "KL107"), count(&doc, "KL108")), (1, 1));
    assert_eq!(line_of(&doc, "KL107"), kl107_line.map(|l| l + 1));
    assert_eq!(line_of(&doc, "KL108"), kl108_line.map(|l| l + 1));
    assert_eq!(Path::Host, edit_and_check(&mut doc, "def run_steps", "    eval(\"1\")\n", ""));
    assert_eq!((count(&doc, "KL107"), count(&doc, "KL108")), (1, 0));
    assert_eq!(Path::Host, edit_and_check(&mut doc, "def forward", "x.half()", "x.half() + 0"));
    assert_eq!((count(&doc, "KL107"), count(&doc, "KL108")), (1, 0));
    assert_eq!(Path::Host, edit_and_check(&mut doc, "def run_steps", "    time.perf_counter = None\n", ""));
    assert_eq!((count(&doc, "KL107"), count(&doc, "KL108")), (0, 0));
}

/// KL001 at a launch site reads what the launched kernel stores and loads
/// (whether the loop carries state) and its parameters: a kernel edit that
/// changes those is analysed afresh, and KL001 follows.
#[test]
fn kl001_follows_what_the_launched_kernel_stores() {
    let src = r#"import torch
import triton
import triton.language as tl


@triton.jit
def step(x_ptr, h_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    h = tl.load(h_ptr + offs)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, h + x)


def run(x, h, T):
    out = torch.empty_like(h)
    for t in range(T):
        step[(1,)](x[t], h, out, h.numel(), BLOCK=64)
        h, out = out, h
    return h
"#;
    let mut doc = Doc::new(src);
    let kl001_count = |doc: &Doc| doc.result.diagnostics.iter().filter(|d| d.code == "KL001").count();
    assert_eq!(kl001_count(&doc), 1, "{:?}", doc.result.diagnostics);
    edit_and_check(&mut doc, "def step", "tl.store(out_ptr + offs, h + x)", "tl.store(x_ptr + offs, h + x)");
    edit_and_check(&mut doc, "def step", "tl.store(x_ptr + offs, h + x)", "tl.store(out_ptr + offs, h + x)");
    assert_eq!(kl001_count(&doc), 1);
    edit_and_check(&mut doc, "def step", "    tl.store(out_ptr + offs, h + x)\n", "");
    edit_and_check(
        &mut doc,
        "def step",
        "    x = tl.load(x_ptr + offs)\n",
        "    x = tl.load(x_ptr + offs)\n    tl.store(out_ptr + offs, h + x)\n",
    );
    assert_eq!(kl001_count(&doc), 1);
    // No longer reading `h`: the loop carries no state, and KL001 goes.
    assert_ne!(
        Path::Kernels,
        edit_and_check(&mut doc, "def step", "h = tl.load(h_ptr + offs)", "h = tl.load(x_ptr + offs)")
    );
    assert_eq!(kl001_count(&doc), 0, "{:?}", doc.result.diagnostics);
    assert_ne!(
        Path::Kernels,
        edit_and_check(&mut doc, "def step", "h = tl.load(x_ptr + offs)", "h = tl.load(h_ptr + offs)")
    );
    assert_eq!(kl001_count(&doc), 1);
    // The parameters renamed: the launch's arguments map to other names.
    assert_ne!(Path::Kernels, edit_and_check(&mut doc, "def step", "x_ptr, h_ptr, out_ptr", "h_ptr, x_ptr, out_ptr"));
    // Typing that leaves loads, stores and parameters alone stays incremental.
    assert_eq!(Path::Kernels, edit_and_check(&mut doc, "def step", "h + x)", "h + x * 2)"));
}

/// The random-edit property over every rule's fixture (each a kernel
/// file or a candidate that fires its rule), with edits that change what
/// rules read across statements: pointers loaded and stored, parameters,
/// constexpr annotations, launches, loops, syncs, imports.
#[test]
fn random_edits_of_every_rule_fixture_match_a_fresh_analysis() {
    const GENERIC: &[&str] = &[
        "tl.load(x_ptr + offs)",
        "tl.store(out_ptr + offs, x)\n    ",
        "_ptr",
        ": tl.constexpr",
        "BLOCK",
        "for t in range(T):\n        ",
        ".item()",
        "import os\n",
        "[(1,)](",
        "\n    ",
        "(",
        "",
    ];
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/rules");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 20, "{} fixtures", paths.len());
    let (mut incremental, mut host, mut stubbed, mut host_stubbed) = (0, 0, 0, 0);
    for path in &paths {
        let text = std::fs::read_to_string(path).expect("fixture");
        let (kernels, host_path, with_stubs, with_host_stubs) = random_edits(&text, GENERIC, 6, 20);
        incremental += kernels;
        host += host_path;
        stubbed += with_stubs;
        host_stubbed += with_host_stubs;
    }
    eprintln!(
            "rule fixtures: {incremental} kernel-path, {host} host-path analyses, {stubbed} with stubs, {host_stubbed} with host stubs"
        );
    assert!(stubbed > 0, "no host-path analysis read a kernel as a stub");
    assert!(host_stubbed > 0, "no host-path analysis read a host function as a stub");
    assert!(incremental > 0, "no analysis took the kernel path");
    assert!(host > 0, "no analysis took the host path");
}

/// KL004's pad-and-mask fix is verified by parsing what it edits: the
/// kernel's statement and its launch sites', not the whole file (which
/// made the fix depend on every statement: a syntax error typed anywhere
/// took it away, and a kernel the host path reads as a stub kept it). A
/// syntax error typed in unrelated host code takes the host path, keeps
/// both fixes, and equals a fresh analysis.
#[test]
fn a_syntax_error_in_host_code_leaves_the_fixes_of_other_kernels() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/rules/KL004.py")).unwrap();
    let mut doc = Doc::new(&text);
    let padded = |doc: &Doc| {
        let pad = |d: &&crate::diagnostic::Diagnostic| d.fix.as_ref().is_some_and(|f| f.title.starts_with("Pad to"));
        doc.result.diagnostics.iter().filter(pad).count()
    };
    assert_eq!(padded(&doc), 2);
    for bad in ["n = x.numel() $", "n = = x.numel()", "n = x.numel()]"] {
        assert_eq!(Path::Host, edit_and_check(&mut doc, "def launch(x)", "n = x.numel()", bad));
        assert!(doc.result.diagnostics.iter().any(|d| d.code == "KL900"), "{bad}");
        assert_eq!(padded(&doc), 2, "{bad}");
        assert_eq!(Path::Host, edit_and_check(&mut doc, "def launch(x)", bad, "n = x.numel()"));
        assert_eq!(padded(&doc), 2);
    }
}

/// A line that sets a version flag changed inside a statement the parser
/// cannot read (KL005 reads the flags from the text: `FLAG = ...version...`
/// at column 0): the `tl` names the flag guards are read again, and the
/// result is a full analysis's (seed 91021 of the random-edit tests, four
/// times the seeds, took the kernel path and kept KL005 silent).
#[test]
fn a_version_flag_unset_in_a_broken_statement_rereads_what_it_guards() {
    let text = "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1.0)\n\n\nets from the version\nTRITON_V9 = triton.__version__ >= \"9.0\"\nif TRITON_V9:\n    scan_fn = tl.scan_v9\n";
    let mut doc = Doc::new(text);
    assert_eq!(doc.count("KL005"), 0, "guarded by a version flag: {:?}", doc.result.diagnostics);
    let at = doc.text.find("__version__").expect("the flag");
    doc.edit(at + "__versi".len(), at + "__version__".len(), "");
    assert_ne!(doc.analyze_as_full(), Path::Kernels, "a flag changed: not the kernel path");
    assert_eq!(doc.count("KL005"), 1, "the flag is gone: {:?}", doc.result.diagnostics);
}

/// KL004 follows a helper's `tl.arange` bound up through the helpers that
/// pass it to the kernel that calls them and to that kernel's launch site:
/// an edit inside the helper reads that launch site too (seed 91157 of the
/// random-edit tests at four times the seeds, where the kernel path lost the
/// finding; failing before this stop too).
#[test]
fn an_edit_in_a_helper_reads_the_launch_sites_of_the_kernels_that_reach_it() {
    let text = "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef _tile(ptr, LEN):\n    offs = tl.arange(0, LEN)\n    return tl.load(ptr + offs)\n\n\n@triton.jit\ndef _through(ptr, LEN):\n    return _tile(ptr, LEN) * 2.0\n\n\n@triton.jit\ndef other(x_ptr, y_ptr, n, B):\n    tl.store(y_ptr + n, _through(x_ptr, B))\n\n\ndef run(x, y):\n    other[(1,)](x, y, x.numel(), B=64)\n";
    let mut doc = Doc::new(text);
    assert_eq!(doc.count("KL004"), 1, "{:?}", doc.result.diagnostics);
    let at = doc.text.find("offs = tl.arange").expect("the helper's line");
    doc.edit(at, at + "offs".len(), "idx");
    let at = doc.text.find("ptr + offs").expect("the helper's load");
    doc.edit(at + "ptr + ".len(), at + "ptr + offs".len(), "idx");
    assert_eq!(doc.analyze_as_full(), Path::Kernels, "an edit inside a helper");
    assert_eq!(doc.count("KL004"), 1, "{:?}", doc.result.diagnostics);
}
