//! What a batch judges: pairs of a candidate and its reference, read from a
//! directory of candidates (each finds its reference as `bench` does), a
//! JSONL file of pairs, or KernelBench's generations layout
//! (`level_L_problem_P_sample_S_kernel.py` beside the level's task files).

use std::path::{Path, PathBuf};

use crate::config::Settings;

/// One candidate and the reference it is judged against.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pair {
    /// Stable name in the output: `level_1_problem_3_sample_0`, or the candidate's path as given.
    pub id: String,
    pub candidate: PathBuf,
    /// `None`: `class Model` is in the candidate itself.
    pub reference: Option<PathBuf>,
}

/// The pairs of `input`; `tasks` is where KernelBench's `levelL/P_Name.py` files are.
pub(crate) fn read(input: &Path, tasks: Option<&Path>, settings: &Settings) -> Result<Vec<Pair>, String> {
    if input.is_file() {
        return read_jsonl(input);
    }
    if !input.is_dir() {
        return Err(format!("{}: no such file or directory", input.display()));
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(input)
        .map_err(|e| format!("cannot read {}: {e}", input.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "py"))
        .collect();
    files.sort();
    let generated: Vec<(PathBuf, (u32, u32, u32))> =
        files.iter().filter_map(|f| Some((f.clone(), kernelbench_name(f)?))).collect();
    if !generated.is_empty() {
        return kernelbench_pairs(input, tasks.unwrap_or(input), generated);
    }
    let mut pairs = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        if !text.lines().any(|l| l.starts_with("class ModelNew")) {
            continue;
        }
        let reference = super::super::find_reference(&file, &text, None, settings);
        let id = file.strip_prefix(input).unwrap_or(&file).display().to_string();
        pairs.push(Pair { id, candidate: file, reference });
    }
    if pairs.is_empty() {
        return Err(format!("{}: no candidate (a file defining `class ModelNew`)", input.display()));
    }
    Ok(pairs)
}

/// `{"candidate": PATH, "reference": PATH, "id": NAME}` per line; paths relative to the file's folder.
fn read_jsonl(path: &Path) -> Result<Vec<Pair>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut pairs = Vec::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("{}:{}: not JSON: {e}", path.display(), n + 1))?;
        let file = |k: &str| v.get(k).and_then(|p| p.as_str()).map(|p| base.join(p));
        let Some(candidate) = file("candidate") else {
            return Err(format!("{}:{}: no \"candidate\"", path.display(), n + 1));
        };
        let id = v.get("id").and_then(|i| i.as_str()).map(str::to_string);
        let id = id.unwrap_or_else(|| v["candidate"].as_str().unwrap_or_default().to_string());
        pairs.push(Pair { id, candidate, reference: file("reference") });
    }
    Ok(pairs)
}

/// `level_1_problem_19_sample_0_kernel.py` (the `_kernel` optional) -> (1, 19, 0).
fn kernelbench_name(file: &Path) -> Option<(u32, u32, u32)> {
    let stem = file.file_stem()?.to_str()?;
    let stem = stem.strip_suffix("_kernel").unwrap_or(stem);
    let rest = stem.strip_prefix("level_")?;
    let (level, rest) = rest.split_once("_problem_")?;
    let (problem, sample) = rest.split_once("_sample_")?;
    Some((level.parse().ok()?, problem.parse().ok()?, sample.parse().ok()?))
}

/// Each generated kernel with its task: `TASKS/levelL/P_*.py` (or `TASKS/P_*.py`).
fn kernelbench_pairs(
    input: &Path,
    tasks: &Path,
    generated: Vec<(PathBuf, (u32, u32, u32))>,
) -> Result<Vec<Pair>, String> {
    let mut pairs = Vec::new();
    for (file, (level, problem, sample)) in generated {
        let dirs = [tasks.join(format!("level{level}")), tasks.to_path_buf()];
        let prefix = format!("{problem}_");
        let task = dirs.iter().find_map(|d| {
            let mut found: Vec<PathBuf> = std::fs::read_dir(d)
                .ok()?
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix)))
                .filter(|p| p.extension().is_some_and(|x| x == "py"))
                .collect();
            found.sort();
            found.into_iter().next()
        });
        let Some(task) = task else {
            return Err(format!(
                "{}: no task file {prefix}*.py for level {level} in {} (pass --tasks, KernelBench's folder of levelN/)",
                file.strip_prefix(input).unwrap_or(&file).display(),
                dirs[0].display()
            ));
        };
        let id = format!("level_{level}_problem_{problem}_sample_{sample}");
        pairs.push(Pair { id, candidate: file, reference: Some(task) });
    }
    Ok(pairs)
}

/// The content hash a rerun recognises a judged pair by: both files' text and
/// what decides the verdict (mode, tolerance, the harness arguments).
pub(crate) fn content_hash(pair: &Pair, settings_key: &str) -> String {
    let read = |p: &Path| std::fs::read(p).unwrap_or_default();
    let mut data = read(&pair.candidate);
    data.extend_from_slice(b"\0reference\0");
    if let Some(r) = &pair.reference {
        data.extend(read(r));
    }
    data.extend_from_slice(b"\0settings\0");
    data.extend_from_slice(settings_key.as_bytes());
    super::super::sha256::hex(&data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernelbench_names_are_read_and_others_are_not() {
        assert_eq!(kernelbench_name(Path::new("level_1_problem_19_sample_0_kernel.py")), Some((1, 19, 0)));
        assert_eq!(kernelbench_name(Path::new("level_2_problem_3_sample_12.py")), Some((2, 3, 12)));
        assert_eq!(kernelbench_name(Path::new("add_new.py")), None);
        assert_eq!(kernelbench_name(Path::new("level_x_problem_1_sample_0.py")), None);
    }

    #[test]
    fn the_generations_layout_pairs_each_sample_with_its_task() {
        let dir = std::env::temp_dir().join(format!("klsp-batch-pairs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("level1")).unwrap();
        std::fs::write(dir.join("level1/19_ReLU.py"), "class Model: pass\n").unwrap();
        std::fs::write(dir.join("level1/1_Square.py"), "class Model: pass\n").unwrap();
        std::fs::write(dir.join("level_1_problem_19_sample_0_kernel.py"), "class ModelNew: pass\n").unwrap();
        std::fs::write(dir.join("level_1_problem_1_sample_1_kernel.py"), "class ModelNew: pass\n").unwrap();
        let pairs = read(&dir, None, &Settings::default()).unwrap();
        let got: Vec<(&str, String)> = pairs
            .iter()
            .map(|p| (p.id.as_str(), p.reference.as_ref().unwrap().file_name().unwrap().to_string_lossy().to_string()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("level_1_problem_19_sample_0", "19_ReLU.py".to_string()),
                ("level_1_problem_1_sample_1", "1_Square.py".to_string())
            ]
        );
        std::fs::write(dir.join("level_1_problem_7_sample_0_kernel.py"), "class ModelNew: pass\n").unwrap();
        let e = read(&dir, None, &Settings::default()).unwrap_err();
        assert!(e.contains("7_*.py"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_hash_follows_both_files_and_the_settings() {
        let dir = std::env::temp_dir().join(format!("klsp-batch-hash-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.py"), "A").unwrap();
        std::fs::write(dir.join("r.py"), "R").unwrap();
        let pair = Pair { id: "a".into(), candidate: dir.join("a.py"), reference: Some(dir.join("r.py")) };
        let h = content_hash(&pair, "gpu");
        assert_ne!(h, content_hash(&pair, "cpu"));
        std::fs::write(dir.join("r.py"), "R2").unwrap();
        assert_ne!(h, content_hash(&pair, "gpu"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
