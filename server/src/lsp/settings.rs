//! Which settings apply to a document: the project file found by
//! `Settings::discover` (`kernel-lsp.toml` or `[tool.kernel-lsp]`), with the
//! keys the editor sets (initialization options, `didChangeConfiguration`)
//! laid over it key by key. Keys the editor does not set keep the project's
//! value, and those neither sets keep the default.

use std::path::Path;

use serde_json::{Map, Value};

use crate::config::Settings;

/// The editor's settings object: under a `kernel-lsp` key, or the whole value.
/// Validated here so that an invalid change can be refused before it replaces
/// the previous settings.
pub(crate) fn editor_settings(value: &Value) -> Result<Value, String> {
    let inner = match value {
        Value::Null => Value::Object(Map::new()),
        Value::Object(map) => match map.get("kernel-lsp").or_else(|| map.get("kernelLsp")) {
            Some(Value::Null) => Value::Object(Map::new()),
            Some(v) => v.clone(),
            None => value.clone(),
        },
        other => return Err(format!("settings must be an object, got {other}")),
    };
    Settings::from_json(&inner)?;
    Ok(inner)
}

/// The settings for the file at `path` (none for unsaved buffers), and an
/// error to show if the project file is invalid (then the editor's settings
/// over the defaults apply).
pub(crate) fn for_file(editor: &Value, path: Option<&Path>) -> (Settings, Option<String>) {
    let (base, error) = match path.map(Settings::discover) {
        Some(Ok((s, _))) => (s, None),
        Some(Err(e)) => (Settings::default(), Some(e.to_string())),
        None => (Settings::default(), None),
    };
    let mut merged = match serde_json::to_value(&base) {
        Ok(v) => v,
        Err(e) => return (base, Some(e.to_string())),
    };
    merge(&mut merged, editor);
    match Settings::from_json(&merged) {
        Ok(s) => (s, error),
        Err(e) => (base, Some(e)),
    }
}

fn merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(slot) if slot.is_object() && v.is_object() => merge(slot, v),
                    _ => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn editor_keys_override_the_project_file_key_by_key() {
        let dir = std::env::temp_dir().join(format!("kernel-lsp-settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("kernel-lsp.toml"),
            "target-gpu = \"a100\"\nignore = [\"KL004\"]\n[bench]\nrepeats = 7\n",
        )
        .unwrap();
        let editor = editor_settings(&json!({"kernel-lsp": {"select": ["KL00"], "bench": {"warmup": 3}}})).unwrap();
        let (s, err) = for_file(&editor, Some(&dir.join("k.py")));
        assert_eq!(err, None);
        assert_eq!(s.target_gpu, "a100");
        assert_eq!(s.ignore, vec!["KL004"]);
        assert_eq!(s.select, vec!["KL00"]);
        assert_eq!((s.bench.repeats, s.bench.warmup), (7, 3));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bench_tolerance_is_a_profile_name_or_a_number() {
        use crate::config::{Precision, Tolerance};
        let (s, _) = for_file(&editor_settings(&json!({"bench": {"tolerance": "legacy"}})).unwrap(), None);
        assert_eq!(s.bench.tolerance, Tolerance::Legacy);
        let (s, _) =
            for_file(&editor_settings(&json!({"bench": {"tolerance": 0.001, "precision": "bf16"}})).unwrap(), None);
        assert_eq!((s.bench.tolerance, s.bench.precision), (Tolerance::Value(0.001), Precision::Bf16));
        let (s, _) = for_file(&json!({}), None);
        assert_eq!(
            (s.bench.tolerance, s.bench.correctness_trials),
            (Tolerance::KernelBench, 5),
            "KernelBench's by default"
        );
        let err = editor_settings(&json!({"bench": {"tolerance": "tight"}})).unwrap_err();
        assert!(err.contains("expected `kernelbench`, `legacy` or a non-negative number"), "{err}");
        assert!(editor_settings(&json!({"bench": {"precision": "fp8"}})).is_err());
    }

    #[test]
    fn invalid_editor_settings_are_refused() {
        assert!(editor_settings(&json!({"target-gpu": "voodoo3"})).is_err());
        assert!(editor_settings(&json!({"no-such-key": 1})).is_err());
        assert!(editor_settings(&json!(3)).is_err());
        assert_eq!(editor_settings(&json!({"ignore": ["KL005"]})).unwrap(), json!({"ignore": ["KL005"]}));
        assert_eq!(editor_settings(&Value::Null).unwrap(), json!({}));
    }
}
