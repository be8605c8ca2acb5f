//! A unified line diff (`diff -u` shape, three lines of context) for showing
//! a rewrite before it is applied.

/// The unified diff from `old` to `new`; empty when they are equal.
pub fn unified(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let ops = line_ops(&a, &b);
    if ops.iter().all(|op| matches!(op, Op::Same(..))) {
        return String::new();
    }
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    const CONTEXT: usize = 3;
    // Group the script into hunks: changes closer than 2 * CONTEXT share one.
    let changed: Vec<usize> =
        ops.iter().enumerate().filter(|(_, op)| !matches!(op, Op::Same(..))).map(|(i, _)| i).collect();
    let mut groups: Vec<(usize, usize)> = Vec::new();
    for &i in &changed {
        match groups.last_mut() {
            Some((_, end)) if i <= *end + 2 * CONTEXT + 1 => *end = i,
            _ => groups.push((i, i)),
        }
    }
    for (first, last) in groups {
        let start = first.saturating_sub(CONTEXT);
        let end = (last + CONTEXT + 1).min(ops.len());
        let (mut a_start, mut b_start) = (0, 0);
        for op in &ops[..start] {
            match op {
                Op::Same(..) => {
                    a_start += 1;
                    b_start += 1;
                }
                Op::Del(_) => a_start += 1,
                Op::Ins(_) => b_start += 1,
            }
        }
        let hunk = &ops[start..end];
        let a_len = hunk.iter().filter(|op| !matches!(op, Op::Ins(_))).count();
        let b_len = hunk.iter().filter(|op| !matches!(op, Op::Del(_))).count();
        let pos = |s: usize, l: usize| {
            if l == 0 {
                format!("{s},0")
            } else {
                format!("{},{l}", s + 1)
            }
        };
        out.push_str(&format!("@@ -{} +{} @@\n", pos(a_start, a_len), pos(b_start, b_len)));
        for op in hunk {
            let (mark, line) = match op {
                Op::Same(i) => (' ', a[*i]),
                Op::Del(i) => ('-', a[*i]),
                Op::Ins(j) => ('+', b[*j]),
            };
            out.push(mark);
            out.push_str(line);
            if !line.ends_with('\n') {
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
    out
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Same(usize),
    Del(usize),
    Ins(usize),
}

/// An edit script by longest common subsequence over the part between the
/// common prefix and suffix (files of a few thousand lines at most).
fn line_ops(a: &[&str], b: &[&str]) -> Vec<Op> {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..].iter().rev().zip(b[prefix..].iter().rev()).take_while(|(x, y)| x == y).count();
    let (am, bm) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let mut ops: Vec<Op> = (0..prefix).map(Op::Same).collect();
    let (n, m) = (am.len(), bm.len());
    if n * m > 16_000_000 {
        ops.extend((0..n).map(|i| Op::Del(prefix + i)));
        ops.extend((0..m).map(|j| Op::Ins(prefix + j)));
    } else {
        // lcs[i][j] = LCS length of am[i..] and bm[j..]
        let mut lcs = vec![0u32; (n + 1) * (m + 1)];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                lcs[i * (m + 1) + j] = if am[i] == bm[j] {
                    lcs[(i + 1) * (m + 1) + j + 1] + 1
                } else {
                    lcs[(i + 1) * (m + 1) + j].max(lcs[i * (m + 1) + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && am[i] == bm[j] {
                ops.push(Op::Same(prefix + i));
                i += 1;
                j += 1;
            } else if j < m && (i == n || lcs[i * (m + 1) + j + 1] > lcs[(i + 1) * (m + 1) + j]) {
                ops.push(Op::Ins(prefix + j));
                j += 1;
            } else {
                ops.push(Op::Del(prefix + i));
                i += 1;
            }
        }
    }
    let a0 = a.len() - suffix;
    ops.extend((0..suffix).map(|k| Op::Same(a0 + k)));
    ops
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_changed_line_gets_one_hunk_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
        assert_eq!(
            super::unified(old, new, "a/x.py", "b/x.py"),
            "--- a/x.py\n+++ b/x.py\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
        );
    }

    #[test]
    fn equal_texts_have_no_diff() {
        assert_eq!(super::unified("x\n", "x\n", "a", "b"), "");
    }

    #[test]
    fn insertion_at_start_of_empty() {
        assert_eq!(super::unified("", "x\n", "a", "b"), "--- a\n+++ b\n@@ -0,0 +1,1 @@\n+x\n");
    }
}
